"""The paper's own layer-wise case study, a sub-part of the runs: DistilBERT NER on the
CoNLL-2003 test split, entity-level F1 under each probe of six of its matrices. It runs where
the model, the data and the packages are at hand, and otherwise says why it did not."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd
from torch import nn

from memlib import paths
from memlib import train as training
from memlib.studies.probes.config import DISTILBERT, Config
from memlib.studies.probes.runs import layerwise_table

# CoNLL-2003 test split: local files in the original text format under $MEMLIB_DATA/conll2003
# (test.txt as most redistributions name it, eng.testb as the shared task did), else the hub's
# parquet export of the dataset (datasets >= 4 refuses the repository's loading script).
CONLL_FILES = ("test.txt", "eng.testb")
CONLL_HUB = "eriktks/conll2003"
CONLL_HUB_REVISION = "refs/convert/parquet"
_NER_TAG = re.compile(r"O|[BI]-\S+")


def distilbert_matrices(model: nn.Module) -> list[str]:
    """The paper's probed matrices: position embeddings, the FFN of the first and of the last
    transformer block, the classifier (layer 5 in dslim/distilbert-NER's six)."""
    last = len(model.distilbert.transformer.layer) - 1
    return ["distilbert.embeddings.position_embeddings.weight",
            "distilbert.transformer.layer.0.ffn.lin1.weight",
            "distilbert.transformer.layer.0.ffn.lin2.weight",
            f"distilbert.transformer.layer.{last}.ffn.lin1.weight",
            f"distilbert.transformer.layer.{last}.ffn.lin2.weight",
            "classifier.weight"]


def iob2(tags: Sequence[str]) -> list[str]:
    """IOB1 -> IOB2: an I-X that does not continue an X entity begins one, so becomes B-X.
    Tags already in IOB2 come back unchanged.

    The shared task's original files are IOB1 (B- only between two adjacent entities of one
    type); the model predicts IOB2. seqeval's default mode would read both the same way, but
    converting makes the reference use exactly the model's label set, so every scoring mode
    (strict IOB2 included) and every per-tag count stays meaningful.
    """
    out, previous = [], "O"
    for tag in tags:
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            tag = "B-" + tag[2:]
        out.append(tag)
        previous = tag
    return out


def parse_conll(lines: Iterable[str]) -> list[tuple[list[str], list[str]]]:
    """(words, IOB2 NER tags) per sentence of a CoNLL-2003 file: one "word POS chunk NER" line
    per token, a blank line between sentences, -DOCSTART- lines (document breaks) skipped.
    Four columns exactly, so a file of another layout fails here instead of scoring a POS or
    chunk column (B-NP looks like an entity tag) as NER."""
    sentences, words, tags = [], [], []

    def flush():
        if words:
            sentences.append((words.copy(), iob2(tags)))
            words.clear()
            tags.clear()

    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            flush()
            continue
        if len(fields) != 4 or not _NER_TAG.fullmatch(fields[-1]):
            raise ValueError(f"line {number} is not 'word POS chunk NER' with an O, B-X or I-X "
                             f"tag last: {line.strip()!r}")
        words.append(fields[0])
        tags.append(fields[-1])
    flush()
    return sentences


def conll_test() -> tuple[list[tuple[list[str], list[str]]], str]:
    """The CoNLL-2003 test sentences (words, IOB2 tags) and where they came from: a local file
    (CONLL_FILES in $MEMLIB_DATA/conll2003) when present, else the hub through `datasets`."""
    folder = paths.data_dir() / "conll2003"
    for name in CONLL_FILES:
        path = folder / name
        if path.is_file():
            raw = path.read_bytes()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:  # some copies of the Reuters text are Latin-1
                text = raw.decode("latin-1")
            try:
                return parse_conll(text.splitlines()), str(path)
            except ValueError as err:
                raise ValueError(f"{path}: {err}") from None
    import datasets

    test = datasets.load_dataset(CONLL_HUB, revision=CONLL_HUB_REVISION, split="test")
    names = test.features["ner_tags"].feature.names
    sentences = [(list(words), iob2([names[t] for t in tags]))
                 for words, tags in zip(test["tokens"], test["ner_tags"], strict=True)]
    return sentences, f"{CONLL_HUB} on the Hugging Face hub"


def distilbert_source(name: str) -> str:
    """Where to load the model from: `name` if it is an absolute path (a folder), else the folder
    $MEMLIB_DATA/models/<name> or $MEMLIB_DATA/models/<last part of name> if present, else
    `name` as a hub id. (Relative folders are not read from the working directory, which
    papermill moves.)"""
    given = Path(name).expanduser()
    if given.is_absolute():
        if not given.is_dir():
            raise FileNotFoundError(f"no model folder {given}")
        return str(given)
    models = paths.data_dir() / "models"
    for folder in (models / name, models / name.rstrip("/").split("/")[-1]):
        if folder.is_dir():
            return str(folder)
    return name


def first_subtoken_positions(word_ids: Sequence[int | None], n_words: int) -> list[int | None]:
    """Per word, the position of its first sub-token (None: cut off by truncation). Words are
    scored by their first sub-token only, the convention of the token-classification recipe
    the model was trained with; special tokens (word id None) are skipped."""
    first: dict[int, int] = {}
    for position, word in enumerate(word_ids):
        if word is not None and word not in first:
            first[word] = position
    return [first.get(w) for w in range(n_words)]


def word_labels(predicted: Sequence[int], positions: Sequence[int | None],
                id2label: dict[int, str]) -> list[str]:
    """Each word's label: the prediction at its first sub-token, "O" if it was truncated."""
    return [id2label[int(predicted[p])] if p is not None else "O" for p in positions]


def _not_run(reason: str) -> str:
    return (f"DistilBERT NER case study not run: {reason}. It needs {DISTILBERT} and the "
            "CoNLL-2003 test split, from local files ($MEMLIB_DATA/models/distilbert-NER, a "
            "save_pretrained folder; $MEMLIB_DATA/conll2003/test.txt or eng.testb) or the "
            "Hugging Face hub (package datasets), and the package seqeval. The ViT on "
            "Fashion-MNIST is a stand-in, not the paper's experiment.")


def distilbert_case_study(config: Config, batch_size: int = 64
                          ) -> tuple[pd.DataFrame | None, str]:
    """The paper's DistilBERT NER study: entity-level F1 (seqeval, in [0, 1]) on the
    CoNLL-2003 test split under each probe of each matrix of `distilbert_matrices`, from local
    files or the hub. Returns (table or None, a one-line status)."""
    if not config.distilbert:
        return None, _not_run("distilbert=false at this scale")
    try:  # the data first: a missing `datasets` fails at once, the offline hub only after retries
        from seqeval.metrics import f1_score
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        sentences, data_source = conll_test()
        source = distilbert_source(config.distilbert_model)
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForTokenClassification.from_pretrained(source).eval()
    except Exception as err:  # offline, missing package or file, unreadable file: "not here"
        return None, _not_run(f"{type(err).__name__}: {' '.join(str(err).split())[:200]}")
    if config.distilbert_sentences is not None:
        sentences = sentences[:config.distilbert_sentences]
    device = training.resolve_device(config.device)
    model.to(device)
    batches = []
    for start in range(0, len(sentences), batch_size):
        words, tags = zip(*sentences[start:start + batch_size], strict=True)
        encoded = tokenizer(list(words), is_split_into_words=True, truncation=True,
                            padding=True, return_tensors="pt")
        positions = [first_subtoken_positions(encoded.word_ids(i), len(w))
                     for i, w in enumerate(words)]
        batches.append((dict(encoded.to(device)), positions, list(tags)))

    def metric(forward):
        truth, predicted = [], []
        for encoded, positions, tags in batches:
            labels = forward(**encoded).logits.argmax(-1).cpu().tolist()
            predicted += [word_labels(row, p, model.config.id2label)
                          for row, p in zip(labels, positions, strict=True)]
            truth += tags
        return f1_score(truth, predicted)

    table = layerwise_table(model, distilbert_matrices(model), metric, config, config.seed)
    return table, (f"DistilBERT NER case study run: {source} on {len(sentences)} CoNLL-2003 "
                   f"test sentences from {data_source}, entity-level F1 in [0, 1].")
