"""Study 1's evaluation passes over a SmallCNN forwarded 128 images at a time inside each
2,048-image batch (`rlp.method.EVAL_CHUNK`), against the whole batch at once, in one
process.

The small preset's default run's model and random-label heads (untrained: a pass costs the
same) measure its training images (`rlp.measure`, the pass every measured epoch makes),
extract the pooled features of its clean training images (`rlp.pooled_features`) and
predict its test set (`rlp.predictions`, the last test row's pass), alternating, fastest
of `--repeats` kept, one CPU thread. Both give the same bits (checked). Last line: `speedup: X`.
"""

from __future__ import annotations

import argparse
import time

import torch

from memlib.process import one_cpu_thread
from memlib.studies import preset_config, rlp
from memlib.studies.rlp import method
from memlib.studies.rlp.runs import load_data, make_heads, make_model


def passes(model, heads, d, layers) -> tuple[float, tuple]:
    start = time.perf_counter()
    scores = rlp.measure(model, heads, d["train_eval"], d["random"])
    features = rlp.pooled_features(model, d["clean_eval"], layers)
    predicted, test = rlp.predictions(model, d["test"])
    return time.perf_counter() - start, (scores, features, predicted, test)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    one_cpu_thread()
    spec = rlp.spec(preset_config("rlp", "small"))
    d = load_data(spec)
    model, layers = make_model(spec, d["num_classes"], tuple(d["example"].shape[1:]))
    heads = make_heads(spec, model, layers, d)
    whole, chunked = [], []
    for _ in range(args.repeats):
        method.EVAL_CHUNK = 10**9
        seconds, reference = passes(model, heads, d, layers)
        whole.append(seconds)
        method.EVAL_CHUNK = 128
        seconds, result = passes(model, heads, d, layers)
        chunked.append(seconds)
    assert result[0] == reference[0] and result[3] == reference[3], "measurements differ"
    assert all(torch.equal(result[1][n], reference[1][n]) for n in layers), "features differ"
    assert torch.equal(result[2], reference[2]), "predictions differ"
    images = len(d["train_eval"][1]) + len(d["clean_eval"][1]) + len(d["test"][1])
    print(f"{spec.model}: measure (training images, {len(layers)} heads) + features + test "
          f"predictions, {images} images, one thread: whole batches {min(whole):.2f} s, "
          f"chunks of 128 {min(chunked):.2f} s; same bits")
    print(f"speedup: {min(whole) / min(chunked):.2f}")


if __name__ == "__main__":
    main()
