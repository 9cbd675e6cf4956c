"""memlib: a reproducible companion to four papers on memorization in deep networks.

Kept import-light on purpose: heavy libraries (timm, transformers, papermill) load
only inside the functions that need them.
"""

__version__ = "0.1.0"

STUDIES = {
    "rlp": "01_random_label_heads",
    "modarith": "02_modular_arithmetic_noise",
    "fisher": "03_fisher_rank_inflation",
    "probes": "04_task_complexity_probes",
    "lens": "05_memorization_lens",
}
SCALES = ("smoke", "small", "full")
DEFAULT_SCALE = "small"
