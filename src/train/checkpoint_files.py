"""The Python example trainer's part of a step folder, beside the loader's (the same names as
stoker-train's, src/train/trainer_checkpoint.h, so jobs/'s TRAINER_FILES default fits both):

    CHECKPOINT_DIR/step-<N>/model.pt       the model's state_dict (torch.save)
                           /optimizer.pt   AdamW's state_dict (torch.save)
                           /trainer.json   trainer "train.py", step, world size, model shape,
                                           seed, lr, warm-up, clipping, tokens trained, checksum
                           /loader/...     the loader's state, one file per rank

Rank 0 alone writes the three files, each atomically, before the ranks save their loader files:
a step folder is complete when all are there (stoker.find_resume_step with TRAINER_FILES). The
two trainers' model files differ: each refuses the other's step folders, saying so.
"""

import glob
import hashlib
import json
import os
import re

import torch

TRAINER_FILES = ("model.pt", "optimizer.pt", "trainer.json")
TRAINER_NAME = "train.py"
FORMAT_VERSION = 1


def write_atomically(path, data):
    """``data`` (bytes) into ``path`` through a temporary file, fsync and rename: the file is
    whole or absent. Makes the folder."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _torch_bytes(value):
    import io
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def model_checksum(model):
    """32 hex digits over the bytes of every parameter, in order."""
    h = hashlib.blake2b(digest_size=16)
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def save_trainer_files(step_dir, model, optimizer, meta):
    """Rank 0 only. ``meta``: the trainer.json fields but the trainer's name and format."""
    write_atomically(f"{step_dir}/model.pt", _torch_bytes(model.state_dict()))
    write_atomically(f"{step_dir}/optimizer.pt", _torch_bytes(optimizer.state_dict()))
    record = {"trainer": TRAINER_NAME, "format_version": FORMAT_VERSION, **meta}
    write_atomically(f"{step_dir}/trainer.json", (json.dumps(record, indent=2) + "\n").encode())


def load_trainer_files(step_dir, shape, model, optimizer, errors):
    """Loads the model and the optimizer of ``step_dir``; returns trainer.json's fields. Raises
    ``errors.ConfigError`` for a model of another shape or a step folder of stoker-train,
    ``errors.DataError`` for a damaged file (each naming it)."""
    path = f"{step_dir}/trainer.json"
    try:
        with open(path, "rb") as f:
            meta = json.loads(f.read())
        trainer = meta.get("trainer", "stoker-train")
        if trainer != TRAINER_NAME:
            raise errors.ConfigError(
                f"{path}: the step folder was written by {trainer}, whose model files this "
                f"trainer ({TRAINER_NAME}) cannot read: resume it with {trainer}")
        if meta.get("format_version") != FORMAT_VERSION:
            raise errors.DataError(f"{path}: format_version {meta.get('format_version')!r} "
                                   f"is not {FORMAT_VERSION}")
        saved = meta["model"]
        missing = [k for k in ("step", "world", "tokens_trained", "model_checksum")
                   if k not in meta]
        if missing:
            raise KeyError(", ".join(missing))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise errors.DataError(f"{path} is not a trainer description: {e}") from e
    differ = [f"{k}: saved {saved.get(k)}, now {v}" for k, v in shape.as_dict().items()
              if saved.get(k) != v]
    if differ:
        raise errors.ConfigError(f"{path} holds a model of another shape:\n  " +
                                 "\n  ".join(differ))
    for name, target in (("model.pt", model), ("optimizer.pt", optimizer)):
        try:
            target.load_state_dict(torch.load(f"{step_dir}/{name}", map_location="cpu"))
        except (OSError, RuntimeError, ValueError, KeyError) as e:
            raise errors.DataError(f"{step_dir}/{name} cannot be loaded: {e}") from e
    if model_checksum(model) != meta.get("model_checksum"):
        raise errors.DataError(f"{step_dir}/model.pt does not match trainer.json (model "
                               f"checksum {model_checksum(model)}, recorded "
                               f"{meta.get('model_checksum')})")
    return meta


def step_folder_world(step_dir):
    """The world size of the loader files of ``step_dir`` (a resharded folder keeps the
    trainer.json of the run that saved the model), or None."""
    worlds = {int(m.group(1)) for f in glob.glob(f"{step_dir}/loader/rank-*-of-*.ckpt")
              if (m := re.search(r"-of-0*(\d+)\.ckpt$", f))}
    return worlds.pop() if len(worlds) == 1 else None
