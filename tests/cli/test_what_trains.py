"""``glassformer train`` with train.freeze, model.embeddings=fixed and LoRA: the header says how
many parameters train; a wrong setting is one line, exit status 2, nothing written."""

from __future__ import annotations

import pytest

from glassformer import load_model

LORA_ERRORS = {
    "freeze names nothing": (
        ['train.freeze=["embed", "blocks.7"]'],
        ["train.freeze: 'blocks.7' names no part of the DecoderLM", "blocks.0, ln_final"],
    ),
    "freeze not a path": (['train.freeze=["blocks/0"]'], ["'blocks/0' is not a module path"]),
    "freeze not a list": (["train.freeze=embed"], ["train.freeze='embed'", "list[str]"]),
    "lora target names nothing": (
        ["train.lora_rank=2", 'train.lora_targets=["attn.query"]'],
        [
            "train.lora_targets: 'attn.query' names no nn.Linear of the DecoderLM; allowed: the "
            "ends of its Linears' paths: blocks.*.attn.q_proj, blocks.*.attn.k_proj",
        ],
    ),
    "lora on the tied unembedding": (
        ["train.lora_rank=2", 'train.lora_targets=["unembed.proj"]'],
        ["unembed.proj.weight is tied to embed.weight", "without LoRA (train.lora_rank=0;"],
    ),
    "lora_rank above the width": (
        ["train.lora_rank=33"],
        [
            "train.lora_rank=33 is larger than the model's width model.d_model=32: each Linear "
            "LoRA adapts reads or writes 32 numbers, so its update B A has rank at most 32; "
            "allowed: train.lora_rank from 1 to 32"
        ],
    ),
    "lora_rank below 0": (["train.lora_rank=-1"], ["lora_rank=-1 must be an int >= 0"]),
    "lora_rank not an int": (["train.lora_rank=2.5"], ["train.lora_rank=2.5", "int"]),
    "lora_rank a string": (['train.lora_rank="8"'], ["train.lora_rank='8'", "int"]),
    "lora_alpha 0": (["train.lora_alpha=0"], ["lora_alpha=0 must be a finite number > 0"]),
    "embeddings unknown": (["model.embeddings=frozen"], ["embeddings='frozen'", "fixed"]),
    "nothing trains": (
        ['train.freeze=["embed", "pos_embed", "blocks", "ln_final"]'],
        ["nothing trains"],
    ),
}


@pytest.mark.parametrize("case", sorted(LORA_ERRORS))
def test_what_trains_user_errors(cli, lm_files, tmp_path, case):
    sets, words = LORA_ERRORS[case]
    out = tmp_path / "run"
    argv = ["train", "--data", lm_files[0], "--out", out, "--steps", "2", *cli.TINY]
    for s in sets:
        argv += ["--set", s]
    cli.assert_user_error(cli.run(*argv), *words)
    assert not out.exists()


def test_the_header_says_how_many_parameters_train(cli, lm_files, tmp_path):
    argv = ["train", "--data", lm_files[0], "--steps", "2", *cli.TINY]
    lora = ["--set", "train.lora_rank=2", "--set", 'train.lora_targets=["fc1"]']
    result = cli.run(*argv, "--out", tmp_path / "lora", *lora)
    assert result.code == 0, result.err
    assert "M parameters, 320 train, context 16)" in result.out  # A 2·32 + B 128·2
    result = cli.run(*argv, "--out", tmp_path / "fixed", "--set", "model.embeddings=fixed")
    assert result.code == 0, result.err
    model = load_model(tmp_path / "fixed")
    trained = model.num_parameters() - model.embed.weight.numel() - model.pos_embed.weight.numel()
    shown = f"{trained / 1e6:.2f}M" if trained >= 10_000 else f"{trained:,}"
    assert f"M parameters, {shown} train, context 16)" in result.out
    result = cli.run(*argv, "--out", tmp_path / "all")
    assert "M parameters, context 16)" in result.out  # everything trains: no count


def test_a_lora_run_is_read_by_every_command_as_the_same_model(cli, lm_files, tmp_path):
    """generate, eval and trace load the run's model with its adapters (config.json's lora
    entry): generate gives what the merged model gives; a run with init_from a LoRA run starts
    from its merged weights."""
    import torch

    from glassformer import Run, generate_text
    from glassformer.finetune import lora_layers, merge_lora

    out = tmp_path / "lora"
    lora = ["--set", "train.lora_rank=2", "--set", 'train.lora_targets=["out_proj", "fc1"]']
    argv = ["--data", lm_files[0], "--steps", "4", *cli.TINY, "--set", "model.dropout=0.0"]
    assert cli.run("train", *argv, "--out", out, *lora).code == 0
    model = load_model(out).eval()
    assert list(lora_layers(model)) == ["blocks.0.attn.out_proj", "blocks.0.mlp.fc1"]
    merge_lora(model)
    greedy = generate_text(model, model.tokenizer, "the", max_new_tokens=6, temperature=0)
    made = cli.run("generate", "--checkpoint", out, "--prompt", "the", "--max-new-tokens", "6",
                   "--temperature", "0")  # fmt: skip
    assert made.code == 0 and made.out == f"the{greedy}\n", (made.out, greedy, made.err)
    evaluated = cli.run("eval", "--checkpoint", out, "--data", lm_files[0])
    assert evaluated.code == 0, evaluated.err
    traced = cli.run("trace", "--checkpoint", out, "--text", "the cat", "--layer", "0")
    assert traced.code == 0, traced.err
    run = Run.plan(data=str(lm_files[0]), init_from=str(out), out=tmp_path / "from", steps=1)
    run.load()
    run.build()
    assert not lora_layers(run.model)
    for name, p in model.state_dict().items():  # the merged weights, W + (alpha / r) B A
        assert torch.equal(run.model.state_dict()[name], p), name
