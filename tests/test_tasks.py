"""One record per task (glassformer/tasks.py): every part that depends on the task agrees with
it: TrainConfig and the command line (names, default preset, the data's own task), the models
(family, class), data loading (kind of examples, aliases) and evaluation (metrics)."""

from __future__ import annotations

import pytest
import torch

from glassformer.cli import build_parser
from glassformer.data import TextDataset, list_datasets, load_dataset, make_loader
from glassformer.data.registry import FILE_SUFFIXES
from glassformer.data.user_files import COLUMNS
from glassformer.models.registry import model_class
from glassformer.presets import PRESETS, preset
from glassformer.runs.plan import make_plan
from glassformer.runs.settings import RunSettings
from glassformer.tasks import (
    DATA_KINDS,
    TASK_NAMES,
    TASKS,
    get_task,
    task_for_data,
    task_for_model,
)
from glassformer.tokenizers import CharTokenizer
from glassformer.training import BatchStream, TrainConfig, Trainer, evaluate

# a built-in dataset of each task's kind of examples
BUILTIN = {"lm": "shakespeare", "mlm": "shakespeare", "seq2seq": "reverse", "classify": "is_sorted"}
SMALL = dict(d_model=16, n_head=2, n_layer=1, max_len=24, dropout=0.0)


def test_the_names_are_the_allowed_values_everywhere():
    assert TASK_NAMES == ("lm", "mlm", "seq2seq", "classify")
    assert TrainConfig.CHOICES["task"] == RunSettings.CHOICES["task"] == TASK_NAMES
    train = build_parser()._subparsers._group_actions[0].choices["train"]
    (task_option,) = [a for a in train._actions if "--task" in a.option_strings]
    assert tuple(task_option.choices) == TASK_NAMES
    with pytest.raises(ValueError, match="task='classification'"):
        TrainConfig(task="classification")  # an alias of the data API only


@pytest.mark.parametrize("name", TASK_NAMES)
def test_model_family_and_default_preset_agree(name):
    task = TASKS[name]
    cls = model_class(task.model_class)
    assert cls.family == task.family == PRESETS[task.preset].family
    assert task_for_model(cls.architecture()) is task
    assert task.metrics[0] == "loss"


def test_the_kinds_of_examples_are_the_data_packages():
    assert DATA_KINDS == ("lm", "seq2seq", "classification")
    assert {info.task for info in list_datasets()} == set(DATA_KINDS)
    assert set(FILE_SUFFIXES.values()) - {None} <= set(DATA_KINDS)
    assert set(COLUMNS) == set(DATA_KINDS) - {"lm"}
    assert [task_for_data(k).name for k in DATA_KINDS] == ["lm", "seq2seq", "classify"]
    with pytest.raises(ValueError, match="task is 'pairs': allowed 'lm', 'seq2seq'"):
        TextDataset("t", "pairs", "train", [])


def test_an_alias_is_its_task_in_the_data_api():
    assert get_task("classification") is get_task("classify") is TASKS["classify"]
    with pytest.raises(ValueError, match="task is 'cls': allowed 'lm', 'mlm', .*'classify'"):
        get_task("cls")
    data = load_dataset("is_sorted", num_examples=24, seed=0)
    tok = CharTokenizer().train(data.texts())
    batches = {
        task: next(iter(make_loader(data, tok, task, batch_size=8, max_len=16, seed=3)))
        for task in (None, "classify", "classification")
    }
    for batch in batches.values():
        assert batch.keys() == batches[None].keys()
        assert all(torch.equal(batch[k], batches[None][k]) for k in batch)
    with pytest.raises(ValueError, match="allowed 'classify', 'classification'"):
        make_loader(data, tok, "seq2seq")


@pytest.mark.parametrize("name", TASK_NAMES)
def test_the_command_line_plans_the_tasks_preset_and_the_datas_own_task(name):
    task = TASKS[name]
    plan = make_plan({"run": {"task": name, "data": BUILTIN[name]}})
    assert (plan.task, plan.preset, plan.train.task) == (name, task.preset, name)
    own = make_plan({"run": {"data": BUILTIN[name]}}).task
    assert own == task_for_data(task.data).name == ("lm" if name == "mlm" else name)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_the_trainer_and_evaluation_follow_the_record(name):
    """The Trainer takes the task's model and refuses another family; evaluation reports the
    task's metrics, on batches of the task's kind of examples."""
    task = TASKS[name]
    options = {"num_examples": 16} if task.data != "lm" else {}
    data = load_dataset(BUILTIN[name], "validation", **options)
    if task.data == "lm":
        data = TextDataset("text", "lm", "validation", [data.examples[0][:300]])
    tok = CharTokenizer().train(data.texts())
    config = preset(task.preset, vocab_size=tok.vocab_size, **SMALL)
    if task.data == "classification":
        config = config.replace(n_classes=len(data.labels))
    torch.manual_seed(0)
    model = model_class(task.model_class)(config)
    train = TrainConfig(task=name, steps=1, batch_size=4)
    trainer = Trainer(model, tok, data, data, train, run_dir=None, progress=False)
    batch = trainer.val_stream.batch(0)
    assert ("decoder_input_ids" in batch) == (task.data == "seq2seq")
    assert batch["labels"].dim() == (1 if task.data == "classification" else 2)
    stream = BatchStream.for_task(
        data, tok, name, max_len=24, batch_size=4, seed=0, shuffle=False, drop_last=False
    )
    metrics = evaluate(model, name, stream, 1, torch.device("cpu"), generate_examples=2)
    assert tuple(metrics) == task.metrics
    other = next(t for t in TASKS.values() if t.family != task.family)
    need = f"task {other.name!r} needs a model of the {other.family} family"
    with pytest.raises(ValueError, match=need):
        Trainer(model, tok, data, data, train.replace(task=other.name), progress=False)
