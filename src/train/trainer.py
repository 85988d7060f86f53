"""The Python example trainer's loop (train.py parses the flags and starts it): the model under
DistributedDataParallel over gloo on the batches of the run session (stoker.RunSession, which
owns the resume, the saves, the stop and the result line, as it does for stoker-train).
Collective over the MPI world; the same steps, logs and result line as stoker-train
(src/train/trainer.cc), so that jobs/ and its tests treat both alike.
"""

import hashlib
from collections import deque

import stoker
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from checkpoint_files import load_trainer_files, model_checksum, save_trainer_files
from rendezvous import start_gloo
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


def gradient_group(comm, layout):
    """The gloo group of the ranks that average their gradients (made on every rank, as
    torch.distributed requires) and this rank's replica group (mpi4py, None without a layout).
    Under a layout: the ranks of this rank's tp and pp coordinates (dp x cp, stoker.layout_comms);
    else the whole job (None: the default group)."""
    if not layout:
        return None, None
    comms = stoker.layout_comms(layout, comm)
    mine = tuple(comms.gradient.allgather(comm.rank))
    comms.data_parallel.Free()
    comms.gradient.Free()
    group = None
    for ranks in sorted(set(comm.allgather(mine))):  # every group, in one order on every rank
        made = dist.new_group(list(ranks))
        group = made if comm.rank in ranks else group
    return group, comms.replica


class Trainer:
    def __init__(self, settings, comm, session, log):
        """``settings``: stoker.parse_settings's; ``session``: the run's stoker.RunSession (its
        loader made, its resume prepared); ``log``: rank 0's log."""
        # hp: the model's settings (TrainerSettings); cfg: the loader's (LoaderConfig)
        self.hp, self.cfg, self.target = settings.trainer, settings.run.loader, settings.run.steps
        self.comm, self.session, self.log = comm, session, log
        self.loader = session.loader
        self.rank, self.size = comm.rank, comm.size
        self.shape = together(comm, self._shape)
        torch.manual_seed(self.cfg.seed)  # the initial weights depend on the seed alone
        self.model = TinyLm(self.shape)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.hp.lr)
        self.tokens_trained, self.steps_run = 0, 0
        # A step's tokens over the job: a replica's counted once (its data-parallel rank's).
        self.tokens_per_step = self.cfg.batch_size * self.cfg.seq_len * self.loader.world_size
        self.batches_hash = hashlib.blake2b(digest_size=16)  # since the last log line
        self.first_losses, self.last_losses = [], deque(maxlen=10)

    def _shape(self):
        vocab = self.hp.vocab or self.loader.vocab_size
        if not vocab:
            raise stoker.ConfigError(f"{self.cfg.data} gives no vocab_size attribute (stoker "
                                     "pack and synth write one): pass --vocab")
        shape = Shape(vocab, self.hp.dim, self.hp.layers, self.hp.heads, self.cfg.seq_len)
        if shape.problems():
            raise stoker.ConfigError("train.py: the model cannot be built:\n  " +
                                     "\n  ".join(shape.problems()))
        return shape

    def start(self):
        """The resumed model and optimizer, the gloo group and the data-parallel wrapper; then
        the session's start (an earlier run's steps refused or deleted, the trace, the clock)."""
        resumed = self.session.resumed_from
        if resumed:
            meta = together(self.comm, lambda: load_trainer_files(
                resumed, self.shape, self.model, self.optimizer, stoker))
            if meta["step"] != self.loader.step:
                raise stoker.DataError(f"{resumed}: trainer.json is of step {meta['step']} but "
                                       f"the loader state of step {self.loader.step}")
            self.tokens_trained = meta["tokens_trained"]
            for key in ("lr", "warmup", "clip"):
                if meta.get(key) != getattr(self.hp, key):
                    self.log(self.comm, f"train: changed at this resume: --{key} "
                                        f"{meta.get(key)} -> {getattr(self.hp, key)}")
        start_gloo(self.comm)
        group, self.replica = gradient_group(self.comm, self.session.layout)
        # Also makes the group's first rank's parameters law in it (the same seed built them all).
        self.ddp = DistributedDataParallel(self.model, process_group=group)
        self.session.start()

    def step(self):
        """One step: batch, forward, backward (gradients averaged by DDP), update. Returns
        whether the ranks agreed to stop (a signal reached one of them)."""
        batch = next(self.session)
        self.batches_hash.update(batch["tokens"].numpy().tobytes())
        top = int(batch["tokens"].max())
        if top >= self.shape.vocab:
            raise stoker.DataError(f"step {batch['step']}: token id {top} is outside the "
                                   f"model's vocabulary of {self.shape.vocab} (--vocab)")
        lr = self.hp.lr * min(1.0, batch["step"] / max(self.hp.warmup, 1))
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        documents = ({"position_ids": batch["position_ids"], "segment_ids": batch["segment_ids"]}
                     if self.hp.doc_mask else {})
        self.optimizer.zero_grad(set_to_none=True)
        logits = self.ddp(batch["input_ids"], **documents)
        loss = F.cross_entropy(logits.reshape(-1, self.shape.vocab), batch["labels"].reshape(-1))
        loss.backward()
        votes = torch.tensor([loss.item(), 1.0 if self.session.stop_requested() else 0.0])
        dist.all_reduce(votes)
        if self.hp.clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.hp.clip)
        self.optimizer.step()
        self.tokens_trained += self.tokens_per_step
        self.steps_run += 1
        mean_loss = votes[0].item() / self.size
        if len(self.first_losses) < 10:
            self.first_losses.append(mean_loss)
        self.last_losses.append(mean_loss)
        return votes[1].item() > 0

    def write_files(self, step_dir):
        """Rank 0's part of a save (the session calls it): model, optimizer, trainer.json."""
        save_trainer_files(step_dir, self.model, self.optimizer, {
            "step": self.loader.step, "world": self.size, "model": self.shape.as_dict(),
            "seed": self.cfg.seed, "lr": self.hp.lr, "warmup": self.hp.warmup,
            "clip": self.hp.clip, "tokens_trained": self.tokens_trained,
            "model_checksum": model_checksum(self.model)})

    def run(self):
        self.start()
        self.last_log = (0.0, 0.0, 0)  # loop seconds, waiting, steps run
        while self.session.running:
            stop = self.step()
            step = self.loader.step
            if self.hp.log_every > 0 and (step % self.hp.log_every == 0 or stop):
                self.log_progress()
            self.session.end_step(stop, self.write_files)
        self.report()
        if self.replica is not None:
            self.replica.Free()
        dist.destroy_process_group()
        return 0

    def check_replica(self):
        """A parallel layout's promise: the ranks of a replica took the same batches since the
        last line (the whole rows, whatever part of them context parallelism gives each).
        Collective."""
        mine, self.batches_hash = self.batches_hash.digest(), hashlib.blake2b(digest_size=16)

        def check():
            if self.replica is not None and len(set(self.replica.allgather(mine))) > 1:
                raise stoker.Error(f"rank {self.rank}: the ranks of its replica took other "
                                   f"batches by step {self.loader.step}")
        together(self.comm, check)

    def log_progress(self):
        self.check_replica()
        now, waiting = self.session.seconds, self.session.waiting
        then, waited, steps = self.last_log
        interval = now - then
        tokens = (self.steps_run - steps) * self.tokens_per_step
        self.log(self.comm, f"train: step {self.loader.step}/{self.target} loss "
                            f"{self.last_losses[-1]:.3f} | {tokens / interval / 1e3:.1f}k tokens/s"
                            f" | data wait {100 * (waiting - waited) / interval:.1f}%"
                            f" | {self.loader.shares()['text']}")
        self.last_log = (now, waiting, self.steps_run)

    def fields(self, checksum, run_shares):
        """The trainer's figures of the result line, beside the session's: with each dataset's
        tokens since step 0 (every run of the job) and those the weights promised it, over every
        rank."""
        tokens = self.steps_run * self.tokens_per_step
        seconds = self.session.seconds

        def mean(values):
            return sum(values) / len(values) if values else None
        return {"loss_start": mean(self.first_losses), "loss_end": mean(self.last_losses),
                "tokens": tokens, "tokens_trained": self.tokens_trained,
                "tokens_per_second": tokens / seconds if seconds > 0 else 0.0,
                "doc_mask": self.hp.doc_mask, "model_checksum": checksum,
                "dataset_tokens": run_shares["tokens"],
                "promised_tokens": run_shares["promised"], "trainer": "train.py"}

    def report(self):
        """Every replica must hold the same model; the session saves the last step and prints
        the result line; rank 0 logs it for people, and the run's mixing."""
        checksums = self.comm.allgather(model_checksum(self.model))
        for r, c in enumerate(checksums):
            if c != checksums[0]:
                raise stoker.Error(f"the model of rank {r} ({c}) differs from rank 0's "
                                   f"({checksums[0]})")
        run_shares = self.loader.shares(since_step_zero=True)
        s = self.session.finish(self.fields(checksums[0], run_shares), self.write_files)
        if self.rank != 0:
            return

        def number(key, form):
            return "-" if s[key] is None else format(s[key], form)
        early = " (stopped early on a signal)" if s["stopped_early"] else ""
        self.log(self.comm, f"train: done: {s['ranks']} ranks, steps {s['start_step']} -> "
                            f"{s['end_step']}{early}, loss {number('loss_start', '.3f')} -> "
                            f"{number('loss_end', '.3f')}, "
                            f"{number('tokens_per_second', '.0f')} tokens/s")
        self.log(self.comm, f"train: mixing over the run: {run_shares['text']} | largest gap "
                            f"{run_shares['largest_gap']:.0f} tokens")
