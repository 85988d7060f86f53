"""The Python example trainer's loop (train.py parses the flags and starts it): the loader, the
model under DistributedDataParallel over gloo, checkpoints, the stop on a signal and the figures.
Collective over the MPI world; the same steps, logs and result line as stoker-train
(src/train/trainer.cc), so that jobs/ and its tests treat both alike.
"""

import json
import os
import socket
import time
from collections import deque
from datetime import timedelta

import stoker
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from checkpoint_files import (TRAINER_FILES, load_trainer_files, model_checksum,
                              save_trainer_files, step_folder_world, write_atomically)
from tiny_lm import Shape, TinyLm


def together(comm, body):
    """Runs ``body()`` on every rank; when it raised on any rank, every rank raises the first
    failing rank's error (a stoker error of the same kind, or stoker.Error) with its message."""
    failure = None
    try:
        result = body()
    except Exception as e:  # noqa: BLE001 (passed on to every rank below)
        failure = (type(e).__name__, str(e))
    failures = [f for f in comm.allgather(failure) if f]
    if failures:
        kind, message = failures[0]
        error = getattr(stoker, kind, None)
        raise (error if isinstance(error, type) and issubclass(error, stoker.Error)
               else stoker.Error)(message)
    return result


def start_gloo(comm):
    """torch.distributed's gloo group over the MPI world: the ranks are MPI's; rank 0 opens the
    rendezvous store on its host (MASTER_ADDR and MASTER_PORT if set, else its host name and a
    free port) and sends the address to the others over MPI. A collective waits up to an hour
    for its slowest rank (gloo's default, 30 minutes, could end a run whose rank waits on cold
    storage; stoker-train's MPI waits for ever)."""
    timeout = timedelta(hours=1)
    host = os.environ.get("MASTER_ADDR") or socket.gethostname()
    store = None
    if comm.rank == 0:
        store = dist.TCPStore(host, int(os.environ.get("MASTER_PORT", 0)), comm.size, True,
                              timeout, wait_for_workers=False)
    host, port = comm.bcast((host, store.port) if comm.rank == 0 else None)
    if comm.rank != 0:
        store = dist.TCPStore(host, port, comm.size, False, timeout)
    dist.init_process_group("gloo", store=store, rank=comm.rank, world_size=comm.size,
                            timeout=timeout)


class Trainer:
    def __init__(self, args, comm, stop, log, reading):
        """``stop``: {"signal": N}, set by the stop handler; ``log``: rank 0's log; ``reading``:
        the Loader's reading settings."""
        self.args, self.comm, self.stop, self.log = args, comm, stop, log
        self.rank, self.size = comm.rank, comm.size
        resume_from = None
        if args.resume:  # newer interrupted step folders go aside (step-<N>.interrupted)
            resume_from = stoker.prepare_resume(args.checkpoint_dir, TRAINER_FILES)
            if resume_from is None:
                log(comm, f"train: no checkpoint in {args.checkpoint_dir} yet: starting at step 0")
        self.resume_from = resume_from
        self.loader = stoker.Loader(
            args.data, weights=stoker.parse_weights(args.weights) if args.weights else None,
            weight_schedule=args.weights_schedule or None, seq_len=args.seq_len,
            batch_size=args.batch_size, seed=args.seed, logical_shards=args.logical_shards,
            resume_from=resume_from,
            boundaries=args.doc_mask, trace_dir=args.trace or None, **reading)
        self.shape = together(comm, self._shape)
        torch.manual_seed(args.seed)  # the initial weights depend on the seed alone
        self.model = TinyLm(self.shape)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=args.lr)
        self.start_step = self.saved_step = self.loader.step
        self.tokens_trained, self.saved_world, self.meta = 0, None, None
        self.stopped_early, self.steps_run, self.waiting = False, 0, 0.0
        self.first_losses, self.last_losses = [], deque(maxlen=10)

    def _shape(self):
        vocab = self.args.vocab or self.loader.vocab_size
        if not vocab:
            raise stoker.ConfigError(f"{self.args.data} gives no vocab_size attribute (stoker "
                                     "pack and synth write one): pass --vocab")
        shape = Shape(vocab, self.args.dim, self.args.layers, self.args.heads, self.args.seq_len)
        if shape.problems():
            raise stoker.ConfigError("train.py: the model cannot be built:\n  " +
                                     "\n  ".join(shape.problems()))
        return shape

    def start(self):
        """Checkpoint folder, resumed state, gloo group and the data-parallel wrapper."""
        a = self.args
        if not a.resume and a.checkpoint_dir:  # an earlier run's steps: refused or deleted
            stoker.prepare_fresh_start(a.checkpoint_dir, a.start_over)
        if self.resume_from:
            self.meta = together(self.comm, lambda: load_trainer_files(
                self.resume_from, self.shape, self.model, self.optimizer, stoker))
            if self.meta["step"] != self.start_step:
                raise stoker.DataError(f"{self.resume_from}: trainer.json is of step "
                                       f"{self.meta['step']} but the loader state of step "
                                       f"{self.start_step}")
            self.tokens_trained = self.meta["tokens_trained"]
            self.saved_world = step_folder_world(self.resume_from) or self.meta["world"]
            self.log(self.comm, f"train: resumed from {self.resume_from} (saved on "
                                f"{self.saved_world} ranks, now {self.size})")
            for key in ("lr", "warmup", "clip"):
                if self.meta.get(key) != getattr(self.args, key):
                    self.log(self.comm, f"train: changed at this resume: --{key} "
                                        f"{self.meta.get(key)} -> {getattr(self.args, key)}")
        start_gloo(self.comm)
        # Also makes rank 0's parameters law on every rank (the same seed built them all).
        self.ddp = DistributedDataParallel(self.model)

    def step(self):
        """One step: batch, forward, backward (gradients averaged by DDP), update. Returns
        whether the ranks agreed to stop (a signal reached one of them)."""
        asked = time.perf_counter()
        batch = next(self.loader)
        self.waiting += time.perf_counter() - asked
        top = int(batch["tokens"].max())
        if top >= self.shape.vocab:
            raise stoker.DataError(f"step {batch['step']}: token id {top} is outside the "
                                   f"model's vocabulary of {self.shape.vocab} (--vocab)")
        lr = self.args.lr * min(1.0, batch["step"] / max(self.args.warmup, 1))
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        documents = ({"position_ids": batch["position_ids"], "segment_ids": batch["segment_ids"]}
                     if self.args.doc_mask else {})
        self.optimizer.zero_grad(set_to_none=True)
        logits = self.ddp(batch["input_ids"], **documents)
        loss = F.cross_entropy(logits.reshape(-1, self.shape.vocab), batch["labels"].reshape(-1))
        loss.backward()
        votes = torch.tensor([loss.item(), 1.0 if self.stop["signal"] else 0.0])
        dist.all_reduce(votes)
        if self.args.clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.clip)
        self.optimizer.step()
        for name, count in batch["dataset_tokens"].items():
            self.log_tokens[name] = self.log_tokens.get(name, 0) + count
        self.tokens_trained += batch["input_ids"].numel() * self.size
        self.steps_run += 1
        mean_loss = votes[0].item() / self.size
        if len(self.first_losses) < 10:
            self.first_losses.append(mean_loss)
        self.last_losses.append(mean_loss)
        return votes[1].item() > 0

    def save(self):
        step = self.loader.step
        if not self.args.checkpoint_dir or step == self.saved_step:
            return
        step_dir = f"{self.args.checkpoint_dir}/step-{step}"
        meta = {"step": step, "world": self.size, "model": self.shape.as_dict(),
                "seed": self.args.seed, "lr": self.args.lr, "warmup": self.args.warmup,
                "clip": self.args.clip, "tokens_trained": self.tokens_trained,
                "model_checksum": model_checksum(self.model)}
        # Rank 0's files are written before any rank's loader file can complete the step.
        together(self.comm, lambda: self.rank == 0 and save_trainer_files(
            step_dir, self.model, self.optimizer, meta))
        self.loader.save(step_dir)
        self.saved_step = step

    def run(self):
        self.start()
        self.started = time.perf_counter()
        self.last_log = (self.started, 0.0, 0)  # time, waiting, steps run
        self.log_weights, self.log_tokens = self.loader.weights, {}  # since the last line
        while self.loader.step < self.args.steps:
            stop = self.step()
            step = self.loader.step
            if self.args.log_every > 0 and (step % self.args.log_every == 0 or stop):
                self.log_progress()
            if self.args.save_every > 0 and step % self.args.save_every == 0:
                self.save()
            if stop:
                self.stopped_early = True
                self.save()
                self.loader.wait_for_save()  # "saved" is said once the step folder is complete
                where = (f"; saved {self.args.checkpoint_dir}/step-{step}"
                         if self.args.checkpoint_dir else " (no --checkpoint-dir: nothing saved)")
                self.log(self.comm, f"train: stopping at step {step} on signal{where}")
                break
        self.save()  # the end of the run is a checkpoint too
        self.loader.wait_for_save()
        self.report()
        dist.destroy_process_group()
        return 0

    def log_progress(self):
        now = time.perf_counter()
        then, waited, steps = self.last_log
        interval = now - then
        tokens = (self.steps_run - steps) * self.args.batch_size * self.args.seq_len * self.size
        self.log(self.comm, f"train: step {self.loader.step}/{self.args.steps} loss "
                            f"{self.last_losses[-1]:.3f} | {tokens / interval / 1e3:.1f}k tokens/s"
                            f" | data wait {100 * (self.waiting - waited) / interval:.1f}%"
                            f" | {self.mixing_text()}")
        self.last_log = (now, self.waiting, self.steps_run)

    def mixing_text(self):
        """As stoker-train logs it: "weights web=0.700 code=0.300 | shares web=0.702 code=0.298",
        the weights of the first batch since the last line and the tokens of each dataset since
        then, over every rank. Collective."""
        names = list(self.log_weights)
        counts = torch.tensor([float(self.log_tokens.get(n, 0)) for n in names],
                              dtype=torch.float64)
        dist.all_reduce(counts)
        total = float(counts.sum())
        shown = [(n, w, c) for n, w, c in zip(names, self.log_weights.values(), counts.tolist())
                 if w > 0 or c > 0]
        weights = " ".join(f"{n}={w:.3f}" for n, w, _ in shown)
        shares = " ".join(f"{n}={c / total if total else 0:.3f}" for n, _, c in shown)
        self.log_weights, self.log_tokens = self.loader.weights, {}
        return f"weights {weights} | shares {shares}"

    def summary(self, seconds, wait_share, checksum):
        tokens = self.steps_run * self.args.batch_size * self.args.seq_len * self.size

        def mean(values):
            return sum(values) / len(values) if values else None
        return {"ranks": self.size, "start_step": self.start_step, "end_step": self.loader.step,
                "stopped_early": self.stopped_early, "resumed_from": self.resume_from,
                "saved_world": self.saved_world, "loss_start": mean(self.first_losses),
                "loss_end": mean(self.last_losses), "tokens": tokens,
                "tokens_trained": self.tokens_trained, "seconds": seconds,
                "tokens_per_second": tokens / seconds if seconds > 0 else 0.0,
                "data_wait_share": wait_share, "doc_mask": self.args.doc_mask,
                "model_checksum": checksum, "trainer": "train.py"}

    def report(self):
        """Every replica must hold the same model; rank 0 logs the figures, prints them as one
        JSON line on stdout and writes them to --result."""
        from mpi4py import MPI
        seconds = self.comm.allreduce(time.perf_counter() - self.started, op=MPI.SUM)
        waiting = self.comm.allreduce(self.waiting, op=MPI.SUM)
        checksums = self.comm.allgather(model_checksum(self.model))
        for r, c in enumerate(checksums):
            if c != checksums[0]:
                raise stoker.Error(f"the model of rank {r} ({c}) differs from rank 0's "
                                   f"({checksums[0]})")
        s = self.summary(seconds / self.size, waiting / seconds if seconds > 0 else 0.0,
                         checksums[0])
        together(self.comm, lambda: self.rank == 0 and self.publish(s))

    def publish(self, s):
        """Rank 0: the summary for people (the log) and for programs (stdout, --result)."""
        def number(key, form):
            return "-" if s[key] is None else format(s[key], form)
        early = " (stopped early on a signal)" if s["stopped_early"] else ""
        self.log(self.comm, f"train: done: {s['ranks']} ranks, steps {s['start_step']} -> "
                            f"{s['end_step']}{early}, loss {number('loss_start', '.3f')} -> "
                            f"{number('loss_end', '.3f')}, "
                            f"{number('tokens_per_second', '.0f')} tokens/s")
        line = json.dumps(s, ensure_ascii=False)
        if self.args.result:
            write_atomically(self.args.result, (line + "\n").encode())
        print(line, flush=True)
