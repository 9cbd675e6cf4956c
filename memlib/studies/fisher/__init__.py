"""Fisher rank inflation: the effective rank of per-example last-layer gradients.

Bathula & Joshi (arXiv 2607.12438). With features h_i of the last affine layer and the
residual r_i = softmax(z_i) - onehot(y_i), the per-example gradient of that layer is the
outer product g_i = r_i (x) [h_i; 1]. Centre the gradients (c_i = g_i - mean), form the
scatter S = sum_i c_i c_i^T and its entropy effective rank er(S) = exp(H(lambda / sum
lambda)). Under label noise er inflates while the network starts memorising, then
collapses. Leave-one-out attribution Delta_i = er(S) - er(S_-i) removes example i from the
*statistic* (not from training): S_-i = S - n/(n-1) c_i c_i^T exactly, so the downdated
spectrum is the root set of a secular equation, solved here for every example from one
eigendecomposition (a small C kernel compiled on first use, else a torch version of the
same iteration). Everything spectral is float64.

The parts, each reading only those after it: `claims`, `experiment` (the training runs a
Config asks for, `training_runs(config)`, and the experiment built from them), `runs`,
`config`, `method`.
"""

from memlib.studies.fisher.claims import *  # noqa: F403
from memlib.studies.fisher.claims import _human_labels as _human_labels
from memlib.studies.fisher.claims import _vit_gaps as _vit_gaps
from memlib.studies.fisher.config import *  # noqa: F403
from memlib.studies.fisher.experiment import *  # noqa: F403
from memlib.studies.fisher.method import *  # noqa: F403
from memlib.studies.fisher.method import _kernel as _kernel
from memlib.studies.fisher.method import _roots_torch as _roots_torch
from memlib.studies.fisher.runs import *  # noqa: F403
