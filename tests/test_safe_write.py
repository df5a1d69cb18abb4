"""glassformer.safe_write: whole files replace a link instead of writing through it, appends refuse
a link, and every file and folder gets the mode the umask gives."""

import contextlib
import os
import stat

import pytest
import torch
from safetensors.torch import save_file

from glassformer.safe_write import (
    append_text,
    file_mode,
    remove,
    replace_file,
    temp_dir,
    write_text,
)


@contextlib.contextmanager
def umask(mask):
    before = os.umask(mask)
    try:
        yield
    finally:
        os.umask(before)


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_whole_file_write_replaces_a_link_and_leaves_its_target(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep me\n")
    link = tmp_path / "run" / "run.json"
    link.parent.mkdir()
    link.symlink_to(outside)
    write_text(link, "new\n")
    assert not link.is_symlink() and link.read_text() == "new\n"
    assert outside.read_bytes() == b"keep me\n"
    assert sorted(p.name for p in link.parent.iterdir()) == ["run.json"]  # no temp file left


def test_an_append_refuses_a_link_and_leaves_its_target(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep me\n")
    link = tmp_path / "metrics.jsonl"
    link.symlink_to(outside)
    with pytest.raises(ValueError, match=f"{link} is a symbolic link"):
        append_text(link, '{"step": 1}\n')
    assert outside.read_bytes() == b"keep me\n"
    plain = tmp_path / "plain.jsonl"
    append_text(plain, "a\n")
    append_text(plain, "b\n")
    assert plain.read_text() == "a\nb\n"


def test_remove_deletes_a_link_not_its_target(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    remove(tmp_path / "link")
    assert not (tmp_path / "link").exists() and (tmp_path / "elsewhere" / "x").exists()


@pytest.mark.parametrize(("mask", "file", "folder"), [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_modes_follow_the_umask_even_for_safetensors(tmp_path, mask, file, folder):
    with umask(mask):
        assert file_mode() == file
        weights = replace_file(
            tmp_path / "w.safetensors", lambda p: save_file({"a": torch.ones(2)}, p)
        )
        text = write_text(tmp_path / "t.json", "{}")
        append_text(tmp_path / "m.jsonl", "{}\n")
        made = temp_dir(tmp_path, ".step-1.")
    assert [mode(p) for p in (weights, text, tmp_path / "m.jsonl")] == [file] * 3
    assert mode(made) == folder
