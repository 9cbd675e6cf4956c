"""Random-label prediction (RLP) heads: measuring and regularizing memorization.

Becker, Konrad, Garcia Rodriguez, Risse, "Random Label Prediction Heads for Studying
Memorization in Deep Neural Networks" (ICLR 2026; arXiv 2411.19640).

Every training sample gets a fixed random label r_i, drawn once from `n_random` classes and
keyed by its index in the full dataset. A linear head on the pooled output of a named layer
learns r_i from *detached* features (L_rnd); its training accuracy in eval mode measures how
much sample-specific information that layer carries. The regularizer L_reg = -λ log(1 - p̂_r)
uses the head with *detached* parameters, so only the extractor learns to hide r_i.

The study in five parts, each reading only those below it: `claims` (the measured values and
the rules), `experiment` (the plan of runs and `run`), `runs` (one training run and its cached
computations), `config` (Config, RunSpec, `spec`) and `method` (the heads, their losses and
the measurements, on tensors). Every public name of the parts is a name of this package.
"""

from memlib.studies.rlp.claims import *  # noqa: F403
from memlib.studies.rlp.config import *  # noqa: F403
from memlib.studies.rlp.experiment import *  # noqa: F403
from memlib.studies.rlp.method import *  # noqa: F403
from memlib.studies.rlp.runs import *  # noqa: F403
