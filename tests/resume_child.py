"""A process for the resume tests (tests/test_resume.py): it computes study 1's training run
and frozen-initialisation baseline and a lens run on tiny settings into $MEMLIB_CACHE, each a
cached computation that checkpoints itself every epoch, and with a batch number as its argument
kills itself with SIGKILL as it draws that training batch (counted over all three): no handler,
no cleanup, as a machine that goes down."""

import memlib  # noqa: F401, I001 - first: it pins the CPU dispatch before numpy and torch load
import os
import signal
import sys

from tiny import tiny

from memlib import process
from memlib.studies import lens, rlp
from memlib.train import TensorBatches


def calls() -> list:
    """(computation, spec) of each entry, in order: dropout and label noise, so that the
    global RNG, the heads and the fit all carry over a resume; measured every other epoch."""
    config = tiny(rlp.Config, dataset="digits", train_samples=300, test_samples=100,
                  validation_samples=50, widths=(32, 32), epochs=5, batch_size=64,
                  measure_every=2, layer_models=("mlp",))
    run = rlp.spec(config, noise=0.4, dropout=0.2, lam=1.0)
    watched = lens.LensRun(run=rlp.spec(config, noise=0.2, seed=1), scatter_samples=40,
                           measure_every=2)
    return [(rlp.cached_run, run), (rlp.cached_frozen, run), (lens.cached_lens, watched)]


def count_batches(die_at: int) -> list[int]:
    """Count the training batches drawn (the list's one item); SIGKILL this process as it
    draws batch `die_at` (0: never)."""
    drawn = [0]
    iterate = TensorBatches.__iter__

    def counted(self):
        for item in iterate(self):
            drawn[0] += 1
            if drawn[0] == die_at:
                os.kill(os.getpid(), signal.SIGKILL)
            yield item

    TensorBatches.__iter__ = counted
    return drawn


if __name__ == "__main__":
    process.one_cpu_thread()
    drawn = count_batches(int(sys.argv[1]))
    for computation, spec in calls():
        computation(spec)
    print(drawn[0])
