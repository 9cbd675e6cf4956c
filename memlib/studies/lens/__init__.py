"""Four lenses on one model: do the papers' memorization measures see the same thing?

None of the four papers asks it; each measures memorization its own way. Here one model,
study 1's default (its own preset, trained by `memlib.studies.rlp.train_run`, random-label heads
at every probed layer), is watched through all of them at once, with each study's
public functions:

- study 1 (rlp): each layer's random-label accuracy above a frozen-initialisation head,
  and the deepest head's confidence in each example's own random label;
- study 2 (modarith): the split of the training labels into the clean ones fitted, the
  corrupted ones memorized and the corrupted ones still predicted correctly (the rule
  kept inside), over training, and per example the epoch from which its label stays fitted;
- study 3 (fisher): er, the effective rank of the last layer's per-example gradients,
  over training, and each example's leave-one-out attribution at the er peak;
- study 4 (probes): the accuracy lost when one layer alone is binarized, half pruned, or its
  weights are shuffled within sign (null model B);
- and three classic per-example scores: the final loss, the area under the margin (AUM)
  and the number of forgetting events.

Per example the scores are compared by Spearman correlation and by how well each finds
the corrupted labels (AUROC); per layer the three layer measures side by side; over
training the curves on one time axis.

The parts: `method` (the per-example scores, the layer probes, agreement and AUROC),
`config` (Config, the specs LensRun and LensMeasures and the plans `lens_runs(config)` and
`lens_measures(config)`), `runs` (the watched run, the measures over what it stored, and
their cached computations), `experiment` (`planned_runs`, `run`, and `watch`, which
`python -m memlib measure` calls with any model's runs) and `claims` (the measures,
the rules and `claims_for(config)`).
"""

from memlib.studies.lens.claims import *  # noqa: F403
from memlib.studies.lens.config import *  # noqa: F403
from memlib.studies.lens.experiment import *  # noqa: F403
from memlib.studies.lens.method import *  # noqa: F403
from memlib.studies.lens.runs import *  # noqa: F403
