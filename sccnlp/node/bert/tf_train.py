"""BERT pretraining with TensorFlow: `python -m sccnlp.node.bert.tf_train --data-dir ... --output-dir ...`.

The PyTorch trainer's job (`sccnlp.node.bert.train`: its options, shards, schedule, metrics file, progress lines,
heartbeats and exit codes) on TensorFlow's own distribution engine. `--backend strategy` (default): one worker per
node; the MPI rank and the MPI hostfile give TF_CONFIG (`tf_config`), and tf.distribute.MultiWorkerMirroredStrategy
runs the node's GPUs as replicas and all-reduces the gradients across workers (NCCL collectives on GPUs, ring over
TCP on CPUs). `--backend aiacc` (AIACC-Training's `perseus.tensorflow.horovod`) or `horovod`: one process per GPU,
the gradients all-reduced through that Horovod API, as the reference procedure launches it.
bf16 compute on GPUs over fp32 master weights; checkpoints with tf.train.CheckpointManager (`ckpt-<step>.index`
and its data file) that keep the data position; `--resume auto` continues from the latest one.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sccnlp.node.bert.metrics import format_line
from sccnlp.node.errors import SccError

BACKENDS = ("strategy", "aiacc", "horovod")
HVD_MODULES = {"aiacc": "perseus.tensorflow.horovod", "horovod": "horovod.tensorflow"}
# Options of the PyTorch trainer's parser that this one does not take (their defaults are accepted).
TORCH_ONLY = ("synthetic", "compile", "encoder", "attn", "full_head", "pad_multiple")
TF_CKPT_RE = re.compile(r"^ckpt-(\d+)\.index$")
FIELDS = ("input_ids", "segment_ids", "lengths", "mlm_positions", "mlm_labels", "nsp_labels")
CHECKPOINT, STOP = 1, 2  # as sccnlp.node.bert.train


def build_parser() -> argparse.ArgumentParser:
    """The PyTorch trainer's options (one command line for both), with this trainer's backends and --hostfile."""
    from sccnlp.node.bert import train

    p = train.build_parser()
    p.prog = "python -m sccnlp.node.bert.tf_train"
    p.description = (__doc__ or "").splitlines()[0]
    for action in p._actions:  # argparse has no public way to change an option's choices
        if action.dest == "backend":
            action.choices, action.default = BACKENDS, "strategy"
            action.help = ("strategy = tf.distribute.MultiWorkerMirroredStrategy, one worker per node; aiacc = "
                           "AIACC-Training's perseus.tensorflow.horovod, horovod = horovod.tensorflow (one process "
                           "per GPU)")
    p.add_argument("--hostfile", default="",
                   help="the MPI hostfile the workers were launched over (--backend strategy: TF_CONFIG)")
    return p


# --------------------------------------------------------------------------------------------------- cluster


def hostfile_hosts(text: str) -> list[str]:
    """The nodes of an Open MPI hostfile, in its order, each once (`node1 slots=8`, comments, blank lines)."""
    hosts: list[str] = []
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if fields and fields[0] not in hosts:
            hosts.append(fields[0])
    return hosts


def tf_config(hostfile_text: str, rank: int, world: int, port: int) -> dict[str, Any]:
    """TF_CONFIG of worker `rank` of `world`, one worker per node of the hostfile (mpirun --map-by ppr:1:node puts
    rank i on the hostfile's i-th node); every worker listens on `port`."""
    hosts = hostfile_hosts(hostfile_text)
    if not hosts:
        raise SccError("the MPI hostfile lists no node: give --hostfile the file mpirun was launched with")
    if world != len(hosts):
        raise SccError(f"{world} workers were launched for the {len(hosts)} nodes of the hostfile "
                       f"({', '.join(hosts)}): the TensorFlow trainer runs one worker per node; launch it with "
                       f"mpirun -np {len(hosts)} --map-by ppr:1:node (the bert role does)")
    if not 0 <= rank < world:
        raise SccError(f"rank {rank} is outside 0..{world - 1}: check the mpirun command line")
    if not 0 < port < 65536:
        raise SccError(f"port {port} (MASTER_PORT) is not a TCP port: set MASTER_PORT to 1..65535")
    return {"cluster": {"worker": [f"{h}:{port}" for h in hosts]}, "task": {"type": "worker", "index": rank}}


def is_local_address(host: str) -> bool:
    """Whether `host` names this machine (a socket can bind to its address)."""
    try:
        addr = socket.gethostbyname(host)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((addr, 0))
    except OSError:
        return False
    return True


def placement_problem(hosts: Sequence[str], rank: int, here: str,
                      is_local: Callable[[str], bool] = is_local_address) -> str:
    """'' when worker `rank` runs on the hostfile's node `rank`, else the message (peers would dial another node)."""
    if 0 <= rank < len(hosts) and is_local(hosts[rank]):
        return ""
    want = hosts[rank] if 0 <= rank < len(hosts) else "?"
    return (f"worker {rank} runs on {here}, but TF_CONFIG puts it on {want} (the hostfile's node {rank}): launch "
            "with mpirun --map-by ppr:1:node over the same hostfile (ranks in the hostfile's node order)")


# --------------------------------------------------------------------------------------------------- data


def tf_arrays(records: dict[str, np.ndarray], trim_to: int = 0) -> dict[str, Any]:
    """One batch of the shards as the TensorFlow model takes it: int32 arrays of full length (static shapes)."""
    from sccnlp.node.bert.data import to_arrays

    arrays = to_arrays(records, trim_to)
    arrays["segment_ids"] = arrays.pop("token_type_ids")
    return {k: arrays[k].astype(np.int32) for k in FIELDS}


def latest_checkpoint(output_dir: Path) -> Path | None:
    """The newest complete checkpoint (`ckpt-<step>.index`; its prefix `ckpt-<step>` is what TensorFlow reads)."""
    found = [(int(m.group(1)), f) for f in output_dir.glob("ckpt-*.index") if (m := TF_CKPT_RE.match(f.name))]
    return max(found)[1].with_suffix("") if found else None


def storage_failure(path: Path, exc: Exception) -> str:
    """The PyTorch trainer's line for a checkpoint the storage refused, from TensorFlow's error text."""
    from sccnlp.node.bert.checkpoint import storage_error_line

    text = str(getattr(exc, "message", exc))
    for code in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EACCES):
        if os.strerror(code).lower() in text.lower():
            return storage_error_line(path, OSError(code, os.strerror(code)))
    return storage_error_line(path, OSError(f"{type(exc).__name__}: {' '.join(text.split())[:200]}"))


# --------------------------------------------------------------------------------------------------- trainer


class Trainer:
    """One worker: the strategy (or Horovod API), model, optimizer, data and checkpoints."""

    def __init__(self, args: argparse.Namespace) -> None:
        from sccnlp.node.bert import watchdog

        self.args = args
        meta = self._check_args()  # every refusal of the options and the data before any rendezvous
        self._set_tf_config()  # before TensorFlow starts
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf

        self.tf = tf
        self._start_engine()  # the strategy or a Horovod API: rank, world, replicas
        self.guard = watchdog.start_for(args, self.rank, self.world)
        tf.random.set_seed(args.seed + 1000 * self.rank)  # dropout masks differ between workers
        self._sizes(meta)
        self._build_model()
        self._build_data()
        self.step = 0
        self.skipped = 0
        self.batches_done = 0  # loader batches this worker has taken: the data position of a checkpoint
        self._window_tokens = self._window_masked = 0
        self.output_dir = Path(args.output_dir) if args.output_dir else None
        self.manager: Any = None
        self._tmp_dir = ""
        if self.output_dir is not None:
            self._open_manager()
        self._maybe_resume()
        self.export: Any = None  # the training heartbeat for node_exporter (sccnlp.node.textfile), rank 0
        if args.textfile_dir and self.rank == 0:
            from sccnlp.node.textfile import TrainingExport

            run = self.output_dir.name if self.output_dir is not None else "bert"
            self.export = TrainingExport(args.textfile_dir, run, self.log)
            self.export.beat(self.step)
        if self.hvd is not None and self.step == 0:
            self.hvd.broadcast_variables([v.value for v in self.model.variables], root_rank=0)
        self.loader.load_state_dict({"epoch": 0, "batch_in_epoch": self.batches_done})
        self._step_fn = self._make_step()
        self._agree_fn = self._make_agree()

    # ---------------------------------------------------------------------------------------------- builders

    def _check_args(self) -> Any:
        from sccnlp.node.bert import data as bdata
        from sccnlp.node.bert import model as bmodel

        args = self.args
        defaults = build_parser().parse_args([])
        for name in TORCH_ONLY:
            if getattr(args, name) != getattr(defaults, name):
                raise SccError(f"--{name.replace('_', '-')} is a setting of the PyTorch trainer "
                               "(sccnlp.node.bert.train): drop it for the TensorFlow one")
        if args.precision == "fp8":
            raise SccError("--precision fp8 is a setting of the PyTorch trainer's own encoder (torchao): use bf16 "
                           "(auto on GPUs) with the TensorFlow one")
        if not args.data_dir:
            raise SccError("no data: pass --data-dir <prepared phase directory>")
        for name in ("batch_size", "steps", "accum_steps", "log_interval"):
            if getattr(args, name) < 1:
                raise SccError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
        bmodel.size_name(args.model)
        meta = bdata.read_meta(args.data_dir)
        if meta.packed:
            raise SccError(f"{args.data_dir} holds packed rows (several pairs a row): the TensorFlow trainer reads "
                           "unpacked shards; prepare the data without --pack")
        if args.vocab_size and args.vocab_size < meta.vocab_size:
            raise SccError(f"vocabulary size mismatch: --vocab-size {args.vocab_size} is smaller than the data's "
                           f"vocab_size {meta.vocab_size} ({args.data_dir}/meta.json): token ids would fall outside "
                           "the embedding; drop --vocab-size (it then follows meta.json) or prepare the data with "
                           "the model's vocabulary")
        self._inject = self._parse_inject(args.inject_nonfinite)
        return meta

    def _set_tf_config(self) -> None:
        """--backend strategy under a launcher: TF_CONFIG from this process's MPI rank and the hostfile."""
        from sccnlp.node.bert.distributed import DEFAULT_PORT, detect_env

        args = self.args
        if args.backend != "strategy":
            return
        env = detect_env()
        if env.local_size > 1:
            raise SccError(f"{env.local_size} workers on this node: the TensorFlow trainer runs one worker per "
                           "node (its GPUs are the strategy's replicas); launch with mpirun --map-by ppr:1:node")
        if env.world_size == 1:
            return
        if not args.hostfile:
            raise SccError("--hostfile is needed with several workers: give the MPI hostfile mpirun used")
        try:
            text = Path(args.hostfile).read_text()
        except OSError as exc:
            raise SccError(f"--hostfile {args.hostfile} cannot be read ({exc.strerror}): give the MPI hostfile "
                           "mpirun used") from None
        port = int(os.environ.get("MASTER_PORT") or DEFAULT_PORT)
        config = tf_config(text, env.rank, env.world_size, port)
        problem = placement_problem(hostfile_hosts(text), env.rank, socket.gethostname())
        if problem:
            raise SccError(problem)
        os.environ["TF_CONFIG"] = json.dumps(config)

    def _start_engine(self) -> None:
        tf = self.tf
        gpus = tf.config.list_physical_devices("GPU")
        self.hvd: Any = None
        if self.args.backend == "strategy":
            self._coordination_timeouts()
            impl = tf.distribute.experimental.CommunicationImplementation
            self.reduce_options = tf.distribute.experimental.CommunicationOptions(
                implementation=impl.NCCL if gpus else impl.RING, timeout_seconds=self.args.collective_timeout)
            self.strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=self.reduce_options)
            resolver = self.strategy.cluster_resolver
            self.rank = int(resolver.task_id or 0) if resolver is not None and resolver.task_type else 0
            self.world = max(1, len(resolver.cluster_spec().as_dict().get("worker", [])) if resolver else 1)
            self.local_replicas = int(self.strategy.num_replicas_in_sync) // self.world
        else:  # one process per GPU, as Horovod runs
            self.hvd = self._horovod(self.args.backend)
            if gpus:
                tf.config.set_visible_devices(gpus[self.hvd.local_rank() % len(gpus)], "GPU")
                gpus = gpus[:1]
            self.strategy = tf.distribute.get_strategy()
            self.rank, self.world = int(self.hvd.rank()), int(self.hvd.size())
            self.local_replicas = 1
        self.gpus = len(gpus)
        self.replicas = self.local_replicas * self.world

    def _coordination_timeouts(self) -> None:
        """The strategy's coordination service marks a worker failed after 10 s without its heartbeat, which a busy
        node's CPU can delay, and then aborts every collective; a worker that dies is noticed sooner by mpirun and a
        hung one by the trainer's own watchdog, so the service waits --collective-timeout (the strategy configures
        the same service itself when none is set; only the timeout differs, there is no public setting for it)."""
        workers = json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster", {}).get("worker", [])
        if len(workers) < 2:
            return
        from tensorflow.python.eager import context
        from tensorflow.tsl.protobuf import coordination_config_pb2

        context.context().configure_coordination_service(
            service_type="standalone", service_leader="/job:worker/replica:0/task:0",
            heartbeat_timeout_in_ms=int(self.args.collective_timeout * 1000),
            coordinated_jobs=[coordination_config_pb2.CoordinatedJob(name="worker", num_tasks=len(workers))])

    def _sizes(self, meta: Any) -> None:
        from sccnlp.node.bert import model as bmodel
        from sccnlp.node.bert.tf_model import Dims

        args = self.args
        self.accum = args.accum_steps
        if args.global_batch_size:
            per_step = args.batch_size * self.replicas
            if args.global_batch_size % per_step:
                raise SccError(f"--global-batch-size {args.global_batch_size} is not a multiple of --batch-size "
                               f"{args.batch_size} x {self.replicas} replicas = {per_step}: choose a global batch "
                               f"size that is (e.g. {max(1, args.global_batch_size // per_step) * per_step}) or "
                               "change --batch-size")
            self.accum = args.global_batch_size // per_step
        self.global_batch = args.batch_size * self.replicas * self.accum
        self.seq_len, self.max_pred = meta.seq_len, meta.max_pred
        self.vocab_size = args.vocab_size or bmodel.pad_vocab(meta.vocab_size)
        self.amp = args.precision == "bf16" or (args.precision == "auto" and self.gpus > 0)
        self.dims = Dims.for_model(args.model, self.vocab_size, self.seq_len)
        self.flops_per_token = bmodel.flops_per_token(self.dims, self.seq_len)
        self.peak = self._peak_flops()

    def _build_model(self) -> None:
        """Model and optimizer under the strategy (mirrored variables), and what a checkpoint holds."""
        from sccnlp.node.bert import model as bmodel
        from sccnlp.node.bert.schedule import warmup_poly
        from sccnlp.node.bert.tf_model import build
        from sccnlp.node.bert.tf_optim import build_optimizer

        tf, args = self.tf, self.args
        with self.strategy.scope():
            self.model = build(self.dims, args.dropout, args.attn_dropout, "bfloat16" if self.amp else "float32",
                               seed=args.seed)
            self.names = self.model.names()
            decays = {id(v): not bmodel.no_decay(n) for v, n in zip(self.model.trainable_weights, self.names)}
            self.optimizer = build_optimizer(args.optimizer, args.lr, args.weight_decay,
                                             lambda v: decays.get(id(v), True))
            self.optimizer.build(self.model.trainable_weights)
        self.variables = list(self.model.trainable_weights)
        self.lr_factor = warmup_poly(args.steps, args.warmup, args.poly_power)
        # Checkpoint bookkeeping: plain variables of each worker, the same values everywhere.
        self.step_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        self.batches_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="data_batches")
        self.epoch_batches_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="data_epoch_batches")
        self.skipped_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="skipped")
        self.identity_var = tf.Variable(json.dumps(self.model_identity(), sort_keys=True), dtype=tf.string,
                                        trainable=False, name="identity")
        weights = tf.Module(name="bert")  # the model's weights under their BertForPreTraining names
        weights.by_name = {name: var.value for name, var in self.model.by_name.items()}
        self.checkpoint = tf.train.Checkpoint(model=weights, optimizer=self.optimizer, step=self.step_var,
                                              data_batches=self.batches_var,
                                              data_epoch_batches=self.epoch_batches_var, skipped=self.skipped_var,
                                              identity=self.identity_var)

    def _build_data(self) -> None:
        """This worker's slice of the shards (a process's, with a Horovod API), full-length batches."""
        from sccnlp.node.bert import data as bdata

        args = self.args
        self.shards = bdata.ShardSet(args.data_dir)
        self.batches_per_step = self.accum * self.local_replicas  # loader batches this worker takes a step
        self.loader = bdata.RankLoader(self.shards, self.rank, self.world, args.batch_size, args.seed,
                                       pad_multiple=0, convert=tf_arrays)
        if args.log_data_ranges:
            print(f"rank={self.rank} world={self.world} data_range=[{self.loader.start},{self.loader.end}) "
                  f"records={self.loader.end - self.loader.start} total={len(self.shards)}", flush=True)

    # ---------------------------------------------------------------------------------------------- pieces

    def log(self, msg: str, all_ranks: bool = False) -> None:
        if all_ranks or self.rank == 0:
            prefix = f"[rank {self.rank}] " if all_ranks and self.world > 1 else ""
            print(prefix + msg, flush=True)

    @staticmethod
    def _horovod(backend: str) -> Any:
        import importlib

        module = HVD_MODULES[backend]
        try:
            hvd = importlib.import_module(module)
        except ImportError as exc:
            what = "AIACC-Training for TensorFlow (perseus-tensorflow)" if backend == "aiacc" else \
                "Horovod built with TensorFlow"
            raise SccError(f"--backend {backend} needs {what}, but `import {module}` failed ({exc}): install it in "
                           "the training venv (role aiacc, aiacc_framework: tensorflow) or use --backend strategy") \
                from None
        hvd.init()
        return hvd

    def _parse_inject(self, spec: str) -> tuple[str, int] | None:
        if not spec:
            return None
        name, _unused, step = spec.rpartition("@")
        from sccnlp.node.bert.tf_model import Dims, hf_shapes

        names = hf_shapes(Dims.for_model(self.args.model, 64, 128))
        if name not in names or not step.isdigit():
            raise SccError(f"--inject-nonfinite {spec!r}: expected PARAM@STEP with PARAM one of the model's "
                           f"parameters (e.g. bert.encoder.layer.0.attention.self.query.weight)")
        return name, int(step)

    def _peak_flops(self) -> float:
        if self.args.peak_tflops:
            return self.args.peak_tflops * 1e12
        if not self.gpus:
            return 0.0
        from sccnlp.node.bert.metrics import peak_flops_for

        details = self.tf.config.experimental.get_device_details(self.tf.config.list_physical_devices("GPU")[0])
        return peak_flops_for(str(details.get("device_name", "")))

    def model_identity(self) -> dict[str, Any]:
        return {"framework": "tensorflow", "model": self.args.model, "vocab_size": self.vocab_size,
                "seq_len": self.seq_len, "max_pred": self.max_pred}

    def describe(self) -> str:
        params = sum(int(np.prod(v.shape)) for v in self.variables)
        device = f"{self.gpus} GPU(s)/worker" if self.gpus else "CPU"
        comm = ("MultiWorkerMirroredStrategy/" + ("nccl" if self.gpus else "ring")) if self.hvd is None else \
            HVD_MODULES[self.args.backend]
        return (f"model={self.args.model} params={params / 1e6:.1f}M seq_len={self.seq_len} max_pred={self.max_pred} "
                f"vocab={self.vocab_size} workers={self.world} replicas={self.replicas} "
                f"batch/gpu={self.args.batch_size} accum={self.accum} global_batch={self.global_batch} "
                f"optimizer={self.args.optimizer} precision={'bf16' if self.amp else 'fp32'} framework=tensorflow "
                f"backend={self.args.backend}/{comm} device={device} data={self.args.data_dir} "
                f"flops/token={self.flops_per_token:.3g}")

    # ---------------------------------------------------------------------------------------------- data

    def dataset(self) -> Any:
        """This worker's batches: `accum` of them stacked per element, one element per local replica and step."""
        tf = self.tf
        spec = {"input_ids": (self.seq_len,), "segment_ids": (self.seq_len,), "lengths": (),
                "mlm_positions": (self.max_pred,), "mlm_labels": (self.max_pred,), "nsp_labels": ()}
        signature = {k: tf.TensorSpec((self.accum, self.args.batch_size, *shape), tf.int32)
                     for k, shape in spec.items()}

        def batches() -> Iterator[dict[str, np.ndarray]]:
            group: list[dict[str, Any]] = []
            for batch in self.loader:  # endless: epoch after epoch
                group.append(batch)
                if len(group) == self.accum:
                    yield {k: np.stack([b[k] for b in group]) for k in FIELDS}
                    group = []

        def make(_context: Any) -> Any:
            return tf.data.Dataset.from_generator(batches, output_signature=signature).prefetch(2)

        return self.strategy.distribute_datasets_from_function(make)

    # ---------------------------------------------------------------------------------------------- the step

    def _all_reduce(self, grads: list[Any]) -> list[Any]:
        """Sum over every replica of the job: the strategy's collective, or the Horovod API's."""
        tf = self.tf
        if self.hvd is not None:
            return [self.hvd.allreduce(g, op=self.hvd.Sum, name=f"grad_{i}") for i, g in enumerate(grads)] \
                if self.world > 1 else grads
        ctx = tf.distribute.get_replica_context()
        return list(ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads, options=self.reduce_options))

    def _make_step(self) -> Any:
        tf = self.tf
        strategy, model, variables = self.strategy, self.model, self.variables
        sources = [v.value for v in variables]  # the tf.Variables behind Keras' variables: what the tape watches
        accum, scale = self.accum, 1.0 / (self.accum * self.replicas)
        max_norm = float(self.args.max_grad_norm)
        inject = None if self._inject is None else (self.names.index(self._inject[0]), self._inject[1])

        def replica_step(batch: dict[str, Any], step: Any) -> tuple[Any, ...]:
            summed: list[Any] | None = None
            losses = []
            for a in range(accum):
                micro = {k: v[a] for k, v in batch.items()}
                with tf.GradientTape() as tape:
                    loss, mlm, nsp = model(micro, training=True)
                    scaled = loss * scale
                grads = [tf.convert_to_tensor(g) for g in tape.gradient(scaled, sources)]
                summed = grads if summed is None else [x + y for x, y in zip(summed, grads)]
                losses.append(tf.stack([loss, mlm, nsp]))
            assert summed is not None
            grads = self._all_reduce(summed)
            if inject is not None:
                i, at = inject
                grads[i] = tf.where(step + 1 == at, grads[i] * float("nan"), grads[i])
            norms = tf.stack([tf.norm(g) for g in grads])
            total = tf.norm(norms)
            bad = tf.logical_not(tf.math.is_finite(norms))
            if max_norm > 0:
                coef = tf.minimum(max_norm / (total + 1e-6), 1.0)
                coef = tf.where(tf.math.is_finite(coef), coef, 0.0)
                grads = [g * coef for g in grads]
            lengths = batch["lengths"]
            tokens = tf.reduce_sum(tf.cast(lengths, tf.int64))
            masked = tf.reduce_sum(tf.cast(batch["mlm_labels"] >= 0, tf.int64))
            return tf.reduce_mean(tf.stack(losses), 0), grads, bad, tokens, masked

        @tf.function(autograph=False)  # plain Python over static sizes: nothing for autograph to convert
        def step_fn(iterator: Any, lr: Any, step: Any) -> tuple[Any, ...]:
            batch = next(iterator)
            losses, grads, bad, tokens, masked = strategy.run(replica_step, args=(batch, step))
            local = strategy.experimental_local_results
            bad0 = local(bad)[0]
            keep = 1.0 - tf.cast(tf.reduce_any(bad0), tf.float32)  # a non-finite step changes nothing
            self.optimizer.learning_rate.assign(lr)
            self.optimizer.apply_step(grads, variables, keep)
            mean = strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)
            return mean, bad0, tf.add_n(list(local(tokens))), tf.add_n(list(local(masked)))

        return step_fn

    def _make_agree(self) -> Any:
        """Rank 0's value reaches every worker (one small all-reduce)."""
        tf = self.tf
        strategy = self.strategy
        if self.hvd is not None:
            return lambda value: float(self.hvd.allreduce(tf.constant(value if self.rank == 0 else 0.0),
                                                          op=self.hvd.Sum, name="agree")) if self.world > 1 \
                else value

        def replica(value: Any) -> Any:
            ctx = tf.distribute.get_replica_context()
            mine = tf.where(ctx.replica_id_in_sync_group == 0, value, 0.0)
            return ctx.all_reduce(tf.distribute.ReduceOp.SUM, mine)

        @tf.function(autograph=False)
        def agree(value: Any) -> Any:
            return strategy.experimental_local_results(strategy.run(replica, args=(value,)))[0]

        return lambda value: float(agree(tf.constant(value if self.rank == 0 else 0.0, tf.float32)))

    def check_nonfinite(self, bad_steps: list[tuple[int, Any]], loss: float | None = None) -> None:
        """The steps of the window whose gradient was not finite (each skipped on the device): stop or report."""
        bad = [(step, mask) for step, mask in bad_steps if mask.any()]
        if not bad:
            return
        self.skipped += len(bad)
        step, mask = bad[0]
        names = [n for n, b in zip(self.names, mask) if b]
        what = names[0] if names else "(no single parameter: the norm overflowed)"
        more = f" and {len(names) - 1} more ({', '.join(names[1:4])}{', ...' if len(names) > 4 else ''})" \
            if len(names) > 1 else ""
        loss_s = f"; loss={loss:.4g}" if loss is not None else ""
        msg = f"non-finite gradient at step {step}: {what}{more}{loss_s}"
        from sccnlp.node.bert.train import NonFiniteGradient

        if self.args.nan_policy == "stop":
            self.log(msg + "; stopping (use --nan-policy skip to skip such steps, or lower --lr)", all_ranks=True)
            raise NonFiniteGradient(msg)
        self.log(msg + f"; step skipped (--nan-policy skip; {len(bad)} step(s) skipped since the last report)",
                 all_ranks=True)

    # ---------------------------------------------------------------------------------------------- checkpoints

    def _open_manager(self) -> None:
        """Rank 0 writes into the run directory; every other worker takes part in the save (the strategy needs all
        of them) into a node-local folder that is removed after each save."""
        tf = self.tf
        assert self.output_dir is not None
        if self.rank == 0:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            for tmp in self.output_dir.glob("ckpt-*_temp*"):  # a writer killed mid-save
                shutil.rmtree(tmp, ignore_errors=True)
            directory = str(self.output_dir)
        else:
            self._tmp_dir = tempfile.mkdtemp(prefix=f"sccnlp-tf-ckpt-{self.rank}-")
            directory = self._tmp_dir
        keep = self.args.keep_checkpoints if self.args.keep_checkpoints > 0 else None
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=keep,
                                                  checkpoint_name="ckpt")

    def save_checkpoint(self) -> Path | None:
        """Every worker saves (rank 0 into the run directory); rank 0's outcome stops every worker on a failure."""
        if self.manager is None or self.output_dir is None:
            return None
        self.step_var.assign(self.step)
        self.batches_var.assign(self.batches_done)
        self.epoch_batches_var.assign(self.loader.batches_per_epoch)
        self.skipped_var.assign(self.skipped)
        path = self.output_dir / f"ckpt-{self.step}.index"
        failure = ""
        try:
            self.manager.save(checkpoint_number=self.step)
        except (self.tf.errors.OpError, OSError) as exc:  # ENOSPC, EIO, EDQUOT, ...: stop now, every worker
            failure = storage_failure(path, exc) if self.rank == 0 else "x"
        if self._tmp_dir:
            shutil.rmtree(self._tmp_dir, ignore_errors=True)
            Path(self._tmp_dir).mkdir(parents=True, exist_ok=True)
        from sccnlp.node.bert.train import CheckpointWriteFailed

        if self._agree_fn(1.0 if failure and self.rank == 0 else 0.0):
            raise CheckpointWriteFailed(failure or "rank 0 could not write the checkpoint", echo=self.rank == 0)
        self.log(f"saved checkpoint {path}")
        if self.export is not None:
            self.export.checkpoint()
        return path

    def _maybe_resume(self) -> None:
        args = self.args
        tf = self.tf
        if args.resume == "none":
            return
        if args.resume == "auto":
            if self.output_dir is None or not self.output_dir.is_dir():
                return
            torch_ckpts = sorted(p.name for p in self.output_dir.glob("ckpt-*.pt"))
            if torch_ckpts:
                raise SccError(f"{self.output_dir} holds checkpoints of the PyTorch trainer ({torch_ckpts[-1]}): "
                               "use another --output-dir (bert_run_name) for the TensorFlow run, or --resume none")
            path = latest_checkpoint(self.output_dir)
            if path is None:
                self.log(f"no checkpoint in {self.output_dir}: starting from step 0")
                return
        else:
            path = Path(args.resume).with_suffix("") if args.resume.endswith(".index") else Path(args.resume)
            if not path.with_name(path.name + ".index").is_file():
                raise SccError(f"--resume {args.resume}: no such checkpoint; use --resume auto or a "
                               "<run dir>/ckpt-<step>.index path")
        reader = tf.train.load_checkpoint(str(path))
        identity = self._read_identity(reader, path)
        if identity != self.model_identity():
            raise SccError(f"checkpoint {path} was written for {identity}, this run is {self.model_identity()}: use "
                           "another --output-dir or the same model/data settings")
        try:
            self.checkpoint.restore(str(path)).assert_existing_objects_matched()
        except (tf.errors.OpError, AssertionError, ValueError) as exc:
            raise SccError(f"cannot read checkpoint {path} ({type(exc).__name__}: {' '.join(str(exc).split())[:300]})"
                           ": delete its files to resume from the previous one") from None
        self.step = int(self.step_var.numpy())
        self.skipped = int(self.skipped_var.numpy())
        done, per_old = int(self.batches_var.numpy()), int(self.epoch_batches_var.numpy())
        per_now = self.loader.batches_per_epoch
        if per_old and per_old != per_now:  # another worker count: the same share of the epoch in the new slice
            epochs = done / per_old
            done = int(epochs) * per_now + int((epochs - int(epochs)) * per_now)
            self.log(f"checkpoint written with {per_old} batches an epoch per worker, now {per_now}: data continues "
                     f"at epoch {int(epochs)}, {epochs - int(epochs):.1%} of it, in each worker's new slice")
        self.batches_done = done
        self.log(f"resumed from step {self.step} ({path})")

    def _read_identity(self, reader: Any, path: Path) -> Any:
        for key in reader.get_variable_to_shape_map():
            if key.startswith("identity/"):
                value = reader.get_tensor(key)
                return json.loads(value.decode() if isinstance(value, bytes) else str(value))
        raise SccError(f"checkpoint {path} was not written by this trainer (no identity): use another --output-dir")

    # ---------------------------------------------------------------------------------------------- loop

    def _record(self, window: list[Any], seconds: float, steps: int, tokens: int, masked: int) -> dict[str, Any]:
        from sccnlp.node.bert.model import step_flops

        losses = np.mean(np.stack(window), axis=0).tolist()
        seq_s = steps * self.global_batch / seconds if seconds > 0 else 0.0
        flops = step_flops(self.dims, self.seq_len, tokens, masked)
        mfu = flops / seconds / (self.peak * max(self.local_replicas, 1)) if self.peak and seconds > 0 else None
        mem = None
        if self.gpus:
            mem = self.tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**30
        return {"step": self.step, "loss": losses[0], "mlm": losses[1], "nsp": losses[2],
                "lr": self.args.lr * self.lr_factor(self.step), "seq_per_s": seq_s,
                "seq_per_s_gpu": seq_s / self.replicas, "mfu": mfu,
                "tok_per_s": tokens * self.world / seconds if seconds > 0 else 0.0, "mem_gib": mem,
                "skipped": self.skipped, "time": time.time(), "world_size": self.world,
                "global_batch": self.global_batch}

    def train_step(self, iterator: Any) -> tuple[Any, ...]:
        """One optimizer step on the next batches of `iterator` (from `dataset()`), without waiting for the device:
        returns the step's (loss, mlm, nsp) mean, the per-weight non-finite mask, and this worker's real tokens and
        masked positions, as device tensors."""
        tf = self.tf
        lr = tf.constant(self.args.lr * self.lr_factor(self.step), tf.float32)
        out = self._step_fn(iterator, lr, tf.constant(self.step, tf.int64))
        self.step += 1
        self.batches_done += self.batches_per_step
        return tuple(out)

    def agree_on_action(self) -> int:
        action = 0
        if self.rank == 0 and self.step < self.args.steps:
            if self.guard is not None and self.guard.stop_reason:
                action = STOP
            elif self.args.ckpt_seconds and time.monotonic() - self.last_ckpt >= self.args.ckpt_seconds:
                action = CHECKPOINT
        return round(self._agree_fn(float(action))) if self.world > 1 else action

    def run(self) -> int:
        args = self.args
        self.log(self.describe())
        from sccnlp.node.bert.train import ENV_KNOB_PREFIXES, ClientGone

        knobs = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(ENV_KNOB_PREFIXES))
        if knobs:
            self.log("env: " + " ".join(knobs))
        metrics = self.output_dir / "metrics.jsonl" if self.output_dir is not None and self.rank == 0 else None
        iterator = iter(self.dataset())
        window: list[Any] = []
        pending: list[tuple[int, Any, Any, Any, Any]] = []  # device results, read at the log interval
        t0, window_start = time.perf_counter(), self.step
        self.last_ckpt = time.monotonic()
        while self.step < args.steps:
            pending.append((self.step + 1, *self.train_step(iterator)))
            if self.guard is not None:
                self.guard.step = self.step
            at_log = self.step % args.log_interval == 0 or self.step == args.steps
            at_ckpt = bool(args.ckpt_interval) and self.step % args.ckpt_interval == 0 and self.step < args.steps
            if not (at_log or at_ckpt):
                continue
            read = [(s, np.asarray(losses), np.asarray(bad), int(tok), int(msk))
                    for s, losses, bad, tok, msk in pending]
            pending = []
            window += [r[1] for r in read]
            self.check_nonfinite([(s, bad) for s, _l, bad, _t, _m in read], float(read[-1][1][0]))
            tokens = sum(r[3] for r in read)
            masked = sum(r[4] for r in read)
            self._window_tokens += tokens
            self._window_masked += masked
            if at_log:
                now = time.perf_counter()
                rec = self._record(window, now - t0, self.step - window_start, self._window_tokens,
                                   self._window_masked)
                self._window_tokens = self._window_masked = 0
                window = []
                if self.rank == 0:
                    print(format_line(rec), flush=True)
                    if self.export is not None:
                        self.export.beat(self.step, rec["loss"], rec["seq_per_s"])
                    if metrics is not None:
                        try:
                            with open(metrics, "a") as fh:
                                fh.write(json.dumps(rec) + "\n")
                        except OSError as exc:
                            self.log(f"metrics line not written to {metrics} ({exc})")
                t0, window_start = time.perf_counter(), self.step
                action = self.agree_on_action()
                if action:
                    self.save_checkpoint()
                    self.last_ckpt = time.monotonic()
                    if action == STOP:
                        why = (self.guard.stop_reason if self.guard is not None else "") or \
                            "the sccnlp train client stopped following the run (rank 0's lease check)"
                        raise ClientGone(f"{why}: stopped at step {self.step} after a checkpoint; run the same "
                                         "command again to resume")
                    t0, window_start = time.perf_counter(), self.step
                    continue
            if at_ckpt:
                self.save_checkpoint()
                self.last_ckpt = time.monotonic()
                t0, window_start = time.perf_counter(), self.step
        if self.output_dir is not None and not (self.output_dir / f"ckpt-{self.step}.index").exists():
            self.save_checkpoint()
        if self.export is not None:
            self.export.beat(self.step, completed=True)
        self.log(f"done: step={self.step} skipped={self.skipped}")
        return 0

    def close(self) -> None:
        if self._tmp_dir:
            shutil.rmtree(self._tmp_dir, ignore_errors=True)


# --------------------------------------------------------------------------------------------------- entry


def is_comm_error(exc: BaseException) -> bool:
    """A collective that failed because a peer is gone: TensorFlow's Unavailable/DeadlineExceeded/Cancelled/Aborted
    errors, or a message about the collective, a connection or a peer."""
    from sccnlp.node.bert import watchdog

    names = ("UnavailableError", "DeadlineExceededError", "CancelledError", "AbortedError")
    return type(exc).__name__ in names or watchdog.is_comm_error(exc) or \
        bool(re.search(r"collective|unavailable|connection|peer", str(exc), re.I))


def main(argv: Sequence[str] | None = None) -> int:
    from sccnlp.node.bert import watchdog
    from sccnlp.node.bert.train import whole_line_output

    whole_line_output()
    args = build_parser().parse_args(argv)
    trainer = None
    try:
        trainer = Trainer(args)
        code = trainer.run()
        watchdog.finish("done")
        return code
    except SccError as exc:
        if getattr(exc, "echo", True):
            print(f"sccnlp.node.bert.tf_train: error: {exc}", file=sys.stderr, flush=True)
        watchdog.finish("error", str(exc))
        return exc.exit_code
    except Exception as exc:
        if type(exc).__module__.startswith("tensorflow") and is_comm_error(exc):
            msg = watchdog.comm_error_line(exc)
            print(f"sccnlp.node.bert.tf_train: error: {msg}", file=sys.stderr, flush=True)
            watchdog.finish("error", msg)
            return watchdog.EXIT_COMM_ERROR
        watchdog.finish("error", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        if trainer is not None:
            trainer.close()


if __name__ == "__main__":
    _code = main()
    # Leave without the interpreter's teardown: TensorFlow's collective and gRPC threads may still wait on a peer
    # that is gone, and the results, checkpoint and heartbeat are written.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_code)
