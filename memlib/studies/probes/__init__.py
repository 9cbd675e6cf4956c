"""Task complexity probes (Jankowski, Radicchi, Serrano, Boguñá, Fortunato, arXiv 2508.05463).

An MLP layer is a signed, weighted bipartite graph. Five data-agnostic probes act on copies
of its weights, layer by layer: pruning, binarization (sign), uniform noise, sign flips and
randomization null models A-G. The gap between full-precision and signed/randomized accuracy
measures how hard the task is.

The study's parts, each reading only those below it: `claims` (with the measure of every
claim), `experiment` (the planned runs and `run`), `runs` (what one run computes, cached;
`distilbert`, the paper's DistilBERT NER case study, is its sub-part), `config` and `method`
(the probes themselves, pure functions of tensors).
"""

from memlib.studies.probes.claims import *  # noqa: F403
from memlib.studies.probes.config import *  # noqa: F403
from memlib.studies.probes.distilbert import *  # noqa: F403
from memlib.studies.probes.experiment import *  # noqa: F403
from memlib.studies.probes.method import *  # noqa: F403
from memlib.studies.probes.runs import *  # noqa: F403
