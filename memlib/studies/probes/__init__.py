"""Task complexity probes (Jankowski, Radicchi, Serrano, Boguñá, Fortunato, arXiv 2508.05463)."""

from memlib.studies.probes.claims import *  # noqa: F403
