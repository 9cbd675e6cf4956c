"""memlib: a reproducible companion to four papers on memorization in deep networks.

Kept import-light on purpose: heavy libraries (timm, transformers, papermill) load
only inside the functions that need them. Importing memlib pins the CPU instruction set
that torch will use (see memlib.process): the same seed then gives the same bits on every
x86-64 machine with AVX2, in this process and in the workers and notebook kernels it starts.
"""

from memlib.process import cuda_determinism_env, pin_cpu_dispatch

pin_cpu_dispatch()  # first: before anything can initialise torch
cuda_determinism_env()  # before CUDA initialises

from memlib import fingerprint  # noqa: E402 - after the pin, which must come first

fingerprint.capture(__path__[0])  # the code this process runs is the code its keys name

__version__ = "0.1.0"

STUDIES = {
    "rlp": "01_random_label_heads",
    "modarith": "02_modular_arithmetic_noise",
    "fisher": "03_fisher_rank_inflation",
    "probes": "04_task_complexity_probes",
    "lens": "05_memorization_lens",
}
STUDY_OF = {notebook: study for study, notebook in STUDIES.items()}  # a notebook's stem -> study
SCALES = ("smoke", "small", "full")
DEFAULT_SCALE = "small"
