"""Study 2: memorization and generalization coexisting in modular arithmetic with label noise.

Liu & Lu, "Unveiling Memorization-Generalization Coexistence: A Case Study on Arithmetic Tasks
with Label Noise". A two-layer net f(a, b) = W phi(U e_a + V e_b) + mu learns a o b mod P
while a fraction alpha of the training labels is replaced by a wrong answer. The method's
pieces are pure functions on weight dicts {"U": (R, M, P), "V": (R, M, P), "W": (R, P, M),
"mu": (R, P)} with a leading run axis R: the forward pass, frequency filtering (FF), phase
alignment, neuron scores (IPR, strength), sub-networks. Analyses build new tensors and never
touch the trained weights. The parts: `method` (those functions and the batched training),
`config` (Config), `runs` (the cached trainings), `experiment` (`planned_runs`, `run` and the
analyses of the main runs) and `claims`.
"""

from memlib.studies.modarith.claims import *  # noqa: F403
from memlib.studies.modarith.config import *  # noqa: F403
from memlib.studies.modarith.experiment import *  # noqa: F403
from memlib.studies.modarith.method import *  # noqa: F403
from memlib.studies.modarith.runs import *  # noqa: F403
from memlib.studies.modarith.runs import _grid, _task  # noqa: F401  (the benchmarks build runs)
