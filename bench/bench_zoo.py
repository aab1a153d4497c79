"""Model zoos as near-miss oracles: build each architecture small, run it under torch,
lint its source with gradguard (issue 28, item 2).

    python bench/bench_zoo.py bert gpt2 llama               # these transformers model types
    python bench/bench_zoo.py --popular                     # the most-copied ones
    python bench/bench_zoo.py --all-transformers --timeout 120
    python bench/bench_zoo.py --diffusers --extras          # diffusers UNets/VAE, vit-pytorch, x-transformers
    python bench/bench_zoo.py --popular --json .bench/zoo.json

The installed libraries are linked into ``--out`` (``.bench/zoo``: ``.bench/zoo/transformers``
is site-packages' ``transformers`` folder, the same files), and for each architecture the
script writes a driver there, ``drive_<name>.py``: a training script that builds the model
from a small configuration written in it (no weights, nothing downloaded), then in train
mode and again in eval mode runs forward on small inputs and ``backward()`` on a loss of
the output. It imports the model as a project imports its own code,
``from transformers.models.bert.modeling_bert import BertModel``.

Then it runs ``python drive_<name>.py`` there (torch is the oracle: it must run clean; the
library it imports is the linked one, the files linted) and ``gradguard check --isolated
--format json`` on the driver and the model's source files (for transformers the model
type's ``modeling_*.py``; for diffusers the UNet, VAE, block, attention and ResNet
modules; for the plain-PyTorch zoos the model's module). The library beside the driver is
the project's source to gradguard, which resolves imports against the driver's folder and
never against site-packages: the driver's import runs the model's ``__init__`` and
``forward`` (and ``PreTrainedModel`` in ``transformers/modeling_utils.py`` is an
``nn.Module`` gradguard sees), within the engine's import depth of two (the driver's
imports and theirs; deeper modules are unknown). The model's files are linted on their
own too. Lines are the installed files' lines.

Every finding of a rule whose hazard raises (GG101-GG104, GG201-GG207, GG304, GG306) on
a model that torch runs clean is a false positive; a finding of a silent rule is listed
for a check of its own. A model that fails to build or to run is recorded with the
reason and not linted. Prints a table (architecture, torch result, seconds to run,
seconds to lint, findings) and every finding with its line in the installed source.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
# Rules whose hazard raises in torch (tests/oracle.py: raises_here / raises_later): a
# finding of one on a model torch runs clean is false. GG304 and GG306 have silent
# variants too; their findings are listed as hazards and checked by hand.
HAZARDS = frozenset({"GG101", "GG102", "GG103", "GG104", "GG201", "GG202", "GG203",
                     "GG204", "GG205", "GG206", "GG207", "GG304", "GG306"})
ERRORS = frozenset({"GG001", "GG002", "GG003"})  # the linter's own failures
# Hazard findings that torch confirms on a path the driver does not take: (file, code, text
# of the flagged line) -> how torch was shown to raise there. Not false; not counted.
CONFIRMED = {
    ("x_transformers/x_transformers.py", "GG101", "self.learned_bias.uniform_("):
        "x-transformers 2.31.10: PolarEmbedding(8, 2, bias_uniform_init=True) raises 'a leaf "
        "Variable that requires grad is being used in an in-place operation' (a real bug; "
        "Attention(polar_bias_uniform_init=True) reaches it)",
}

POPULAR = ["bert", "gpt2", "llama", "t5", "vit", "roberta", "bart", "mistral", "whisper",
           "clip", "resnet", "convnext", "swin", "detr", "wav2vec2", "distilbert", "gpt_neox",
           "opt", "mixtral", "qwen2", "gemma", "phi", "falcon", "deberta-v2", "electra",
           "albert", "mobilenet_v2", "segformer", "deit", "beit", "dinov2", "mt5", "blip",
           "siglip", "hubert", "bloom", "gptj", "mpt", "layoutlm", "xlm-roberta"]

# Shrunk values, applied to each attribute the model type's default configuration has.
SMALL = {
    "vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 64, "max_position_embeddings": 64,
    "head_dim": 8, "d_model": 32, "d_ff": 64, "d_kv": 8, "num_layers": 2,
    "num_decoder_layers": 2, "num_heads": 4, "encoder_layers": 2, "decoder_layers": 2,
    "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64, "n_layer": 2, "n_head": 4, "n_embd": 32, "n_positions": 64,
    "n_inner": 64, "ffn_dim": 64, "image_size": 32, "patch_size": 4,
    "num_experts": 4, "num_local_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 16, "shared_expert_intermediate_size": 16,
    "projection_dim": 16, "embedding_size": 32, "max_source_positions": 16,
    "max_target_positions": 32, "num_mel_bins": 16, "embed_dim": 16,
    "hidden_sizes": [8, 16], "depths": [1, 1], "num_channels": 3,
}
SMALL_LISTS = {"depths", "hidden_sizes"}
# Sub-configurations (text_config, vision_config, ...) get the same treatment.
SUBCONFIGS = ("text_config", "vision_config", "audio_config", "encoder_config",
              "decoder_config", "backbone_config", "qformer_config")


@dataclass
class Result:
    name: str
    zoo: str
    status: str = "pending"  # built | failed-build | failed-run | timeout | linted
    reason: str = ""
    run_s: float = 0.0
    lint_s: float = 0.0
    files: list[str] = field(default_factory=list)
    findings: list[dict] = field(default_factory=list)
    config: str = ""  # which configuration ran: shrunk, or the defaults with fewer layers

    def hazards(self) -> list[dict]:
        return [f for f in self.findings if f["code"] in HAZARDS | ERRORS and not confirmed(f)]


def confirmed(finding: dict) -> str:
    """Why torch confirms ``finding`` (``CONFIRMED``), or ""."""
    try:
        text = Path(finding["source"]).read_text(encoding="utf-8").splitlines()[finding["line"] - 1]
    except (OSError, IndexError, TypeError, UnicodeDecodeError):
        return ""
    return next((why for (file, code, line), why in CONFIRMED.items()
                 if finding["source"].endswith(file) and finding["code"] == code and line in text), "")


# ----------------------------------------------------------------------------- the library beside
def place_libraries(run: Path, packages: list[str]) -> dict[str, Path]:
    """Link each installed package into ``run`` (``run/transformers`` -> site-packages'
    folder): the drivers there import it as a project's own source, and so does gradguard."""
    placed = {}
    for package in packages:
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            continue
        source = Path(spec.origin).parent
        link = run / package
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(source, target_is_directory=True)
        placed[package] = source
    return placed


# ----------------------------------------------------------------------------- transformers
def shrink(config, small: dict) -> dict:
    """The keyword arguments that shrink ``config`` (a default configuration)."""
    kwargs = {}
    for key, value in small.items():
        if not hasattr(config, key):
            continue
        current = getattr(config, key)
        if key in SMALL_LISTS:
            if isinstance(current, (list, tuple)) and current:
                n = len(value)
                kwargs[key] = list(value)
                # lists that go with depths (num_heads per stage, strides, ...)
                for other in ("num_heads", "hidden_sizes", "embed_dims", "strides", "patch_sizes",
                              "sr_ratios", "mlp_ratios", "kernel_sizes",
                              "out_features", "out_indices", "stage_names", "window_sizes"):
                    seq = getattr(config, other, None)
                    if other != key and isinstance(seq, (list, tuple)) and len(seq) == len(current):
                        kwargs[other] = list(seq[:n]) if other != "num_heads" else [2] * n
        elif isinstance(current, bool) or current is None:
            continue
        elif isinstance(current, int) and isinstance(value, int):
            kwargs[key] = min(current, value) if key not in ("num_channels",) else current
        elif key not in SMALL_LISTS and not isinstance(current, (list, tuple, dict)):
            kwargs[key] = value
    for name in ("out_features", "out_indices", "stage_names"):
        kwargs.pop(name, None)
    if "depths" in kwargs and "embed_dim" in kwargs:  # a hierarchical vision model (Swin):
        kwargs.pop("hidden_size", None)  # its hidden size follows from embed_dim and depths
    if "vocab_size" in kwargs:  # special tokens inside the smaller vocabulary
        vocab = kwargs["vocab_size"]
        for key, current in vars(config).items():
            if not key.endswith(("token_id", "token_ids", "tokens")) or isinstance(current, bool):
                continue
            if isinstance(current, int) and current >= vocab:
                kwargs[key] = 1 + len([k for k in kwargs if k.endswith("token_id")]) % (vocab - 1)
            elif isinstance(current, (list, tuple)) and any(
                    isinstance(t, int) and t >= vocab for t in current):
                kwargs[key] = [t for t in current if isinstance(t, int) and t < vocab]
    return kwargs


def transformers_case(model_type: str, small: bool = True) -> tuple[str, str, str]:
    """(package folder, module, class) and the driver's text for a transformers model type."""
    import transformers
    from transformers import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    class_name = MODEL_MAPPING_NAMES[model_type]
    if isinstance(class_name, (list, tuple)):
        class_name = class_name[0]
    cls = getattr(transformers, class_name)
    module = cls.__module__  # transformers.models.bert.modeling_bert
    config = CONFIG_MAPPING[model_type]()
    kwargs = shrink(config, SMALL) if small else {
        k: 2 for k in ("num_hidden_layers", "num_layers", "encoder_layers", "decoder_layers", "n_layer")
        if isinstance(getattr(config, k, None), int)}
    sub = {}
    for name in SUBCONFIGS:
        part = getattr(config, name, None)
        if part is not None and hasattr(part, "to_dict"):
            sub[name] = shrink(part, SMALL) if small else {}
    signature = inspect.signature(cls.forward).parameters
    return module, class_name, driver_text(model_type, module, class_name, kwargs, sub, signature,
                                           getattr(cls, "main_input_name", "input_ids"), config)


def inputs_text(signature, main: str, config) -> list[str]:
    def get(*names, default):
        for name in names:
            for holder in (config, getattr(config, "vision_config", None),
                           getattr(config, "text_config", None), getattr(config, "audio_config", None)):
                if holder is not None and isinstance(getattr(holder, name, None), int):
                    return name
        return default
    lines = []
    if "input_ids" in signature:
        lines.append("inputs['input_ids'] = torch.randint(0, 90, (2, 8))")
        if "attention_mask" in signature:
            lines.append("inputs['attention_mask'] = torch.ones(2, 8, dtype=torch.long)")
    if "decoder_input_ids" in signature:
        lines.append("inputs['decoder_input_ids'] = torch.randint(0, 90, (2, 8))")
    if "pixel_values" in signature:
        lines.append("inputs['pixel_values'] = torch.randn(2, 3, 32, 32)")
    if main == "input_values" and "input_values" in signature:
        lines.append("inputs['input_values'] = torch.randn(2, 4000)")
    if main == "input_features" and "input_features" in signature:
        lines.append("inputs['input_features'] = torch.randn(2, 16, 32)")
    if "bbox" in signature:
        lines.append("inputs['bbox'] = torch.zeros(2, 8, 4, dtype=torch.long)")
    return lines


def driver_text(model_type, module, class_name, kwargs, sub, signature, main, config) -> str:
    config_module, config_name = type(config).__module__, type(config).__name__
    config_lines = [f"kwargs = {kwargs!r}"]
    for name, values in sub.items():
        config_lines.append(f"kwargs[{name!r}] = {values!r}")
    body = "\n".join([
        '"""Train-mode and eval-mode forward and backward of a small ' + class_name + '."""',
        "import torch",
        f"from {config_module} import {config_name}",
        f"from {module} import {class_name}",
        "",
        "torch.manual_seed(0)",
        *config_lines,
        f"config = {config_name}(**kwargs)",
        f"model = {class_name}(config)",
        "inputs = {}",
        *inputs_text(signature, main, config),
        "",
        "",
        "def loss_of(out):",
        "    first = out if isinstance(out, torch.Tensor) else out[0]",
        "    return first.float().pow(2).mean()",
        "",
        "",
        "model.train()",
        "out = model(**inputs)",
        "loss = loss_of(out)",
        "loss.backward()",
        "model.zero_grad()",
        "model.eval()",
        "out = model(**inputs)",
        "loss = loss_of(out)",
        "loss.backward()",
        "print('ok', float(loss))",
        "",
    ])
    return body


def safe(name: str) -> str:
    return re.sub(r"\W", "_", name)


# ----------------------------------------------------------------------------- other zoos
DIFFUSERS_FILES = ("unets/unet_2d.py", "unets/unet_2d_condition.py", "unets/unet_2d_blocks.py",
                   "resnet.py", "attention_processor.py", "attention.py", "embeddings.py",
                   "normalization.py", "activations.py", "downsampling.py", "upsampling.py",
                   "autoencoders/autoencoder_kl.py", "autoencoders/vae.py", "transformers/transformer_2d.py",
                   "attention_dispatch.py")

DIFFUSERS = {
    "UNet2DModel": ("unets.unet_2d", "dict(sample_size=16, in_channels=3, out_channels=3, "
                    "block_out_channels=(32, 64), layers_per_block=1, norm_num_groups=8, "
                    "down_block_types=('DownBlock2D', 'AttnDownBlock2D'), "
                    "up_block_types=('AttnUpBlock2D', 'UpBlock2D'), attention_head_dim=8)",
                    "out = model(torch.randn(2, 3, 16, 16), torch.tensor([10, 20]))",
                    "out = out.sample"),
    "UNet2DConditionModel": ("unets.unet_2d_condition", "dict(sample_size=16, in_channels=4, "
                             "out_channels=4, block_out_channels=(32, 64), layers_per_block=1, "
                             "norm_num_groups=8, cross_attention_dim=32, attention_head_dim=8, "
                             "down_block_types=('CrossAttnDownBlock2D', 'DownBlock2D'), "
                             "up_block_types=('UpBlock2D', 'CrossAttnUpBlock2D'))",
                             "out = model(torch.randn(2, 4, 16, 16), torch.tensor([10, 20]), "
                             "encoder_hidden_states=torch.randn(2, 5, 32))",
                             "out = out.sample"),
    "AutoencoderKL": ("autoencoders.autoencoder_kl", "dict(in_channels=3, out_channels=3, "
                      "block_out_channels=(32, 64), layers_per_block=1, norm_num_groups=8, "
                      "latent_channels=4, down_block_types=('DownEncoderBlock2D', 'DownEncoderBlock2D'), "
                      "up_block_types=('UpDecoderBlock2D', 'UpDecoderBlock2D'))",
                      "out = model(torch.randn(2, 3, 16, 16), sample_posterior=True)",
                      "out = out.sample"),
}


def diffusers_driver(class_name: str) -> str:
    module, config, call, pick = DIFFUSERS[class_name]
    return "\n".join([
        f'"""Train-mode and eval-mode forward and backward of a small {class_name}."""',
        "import torch",
        f"from diffusers.models.{module} import {class_name}",
        "",
        "torch.manual_seed(0)",
        f"model = {class_name}(**{config})",
        "for mode in ('train', 'eval'):",
        "    if mode == 'train':",
        "        model.train()",
        "    else:",
        "        model.eval()",
        f"    {call}",
        f"    {pick}",
        "    loss = out.float().pow(2).mean()",
        "    loss.backward()",
        "    model.zero_grad()",
        "print('ok', float(loss))",
        "",
    ])


EXTRAS = {
    # name: (package, driver body after the import lines, files to lint)
    "vit_pytorch.ViT": ("vit_pytorch", "from vit_pytorch.vit import ViT\n"
                        "model = ViT(image_size=32, patch_size=8, num_classes=10, dim=32, depth=2, heads=4,"
                        " mlp_dim=64, dropout=0.1, emb_dropout=0.1)\n"
                        "x = torch.randn(2, 3, 32, 32)\n", ["vit.py"]),
    "vit_pytorch.CaiT": ("vit_pytorch", "from vit_pytorch.cait import CaiT\n"
                         "model = CaiT(image_size=32, patch_size=8, num_classes=10, dim=32, depth=2,"
                         " cls_depth=1, heads=4, mlp_dim=64, dropout=0.1, emb_dropout=0.1, layer_dropout=0.05)\n"
                         "x = torch.randn(2, 3, 32, 32)\n", ["cait.py"]),
    "vit_pytorch.SimpleViT": ("vit_pytorch", "from vit_pytorch.simple_vit import SimpleViT\n"
                              "model = SimpleViT(image_size=32, patch_size=8, num_classes=10, dim=32,"
                              " depth=2, heads=4, mlp_dim=64)\n"
                              "x = torch.randn(2, 3, 32, 32)\n", ["simple_vit.py"]),
    "vit_pytorch.MaxViT": ("vit_pytorch", "from vit_pytorch.max_vit import MaxViT\n"
                           "model = MaxViT(num_classes=10, dim_conv_stem=16, dim=16, dim_head=8, depth=(1, 1),"
                           " window_size=4, mbconv_expansion_rate=2, mbconv_shrinkage_rate=0.25, dropout=0.1)\n"
                           "x = torch.randn(2, 3, 32, 32)\n", ["max_vit.py"]),
    "x_transformers.TransformerWrapper": (
        "x_transformers", "from x_transformers.x_transformers import TransformerWrapper, Decoder\n"
        "model = TransformerWrapper(num_tokens=99, max_seq_len=16,"
        " attn_layers=Decoder(dim=32, depth=2, heads=4, rotary_pos_emb=True, ff_glu=True))\n"
        "x = torch.randint(0, 99, (2, 16))\n", ["x_transformers.py", "attend.py"]),
}


def extras_driver(name: str) -> str:
    package, body, _ = EXTRAS[name]
    return "\n".join([
        f'"""Train-mode and eval-mode forward and backward of a small {name}."""',
        "import torch",
        body.rstrip("\n"),
        "",
        "model.train()",
        "loss = model(x).float().pow(2).mean()",
        "loss.backward()",
        "model.zero_grad()",
        "model.eval()",
        "loss = model(x).float().pow(2).mean()",
        "loss.backward()",
        "print('ok', float(loss))",
        "",
    ])


# ----------------------------------------------------------------------------- running
def run_driver(folder: Path, driver: str, timeout: float) -> tuple[bool, str, float]:
    start = time.perf_counter()
    env = dict(os.environ, OMP_NUM_THREADS="1",
               TRANSFORMERS_OFFLINE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    try:
        done = subprocess.run([sys.executable, driver], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"timeout after {timeout:.0f} s", time.perf_counter() - start
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = [line for line in done.stderr.strip().splitlines() if line.strip()]
        return False, (tail[-1] if tail else f"exit {done.returncode}")[:300], seconds
    return True, "", seconds


# ``--neutral``: an experiment, not gradguard as shipped. A decorator the engine does not
# know makes a function's grad mode unknown ("it may run the body under no_grad"), and
# transformers decorates the forward of nearly every model (``@merge_with_config_defaults``,
# ``@capture_outputs``, ``@can_return_tuple``, ``@auto_docstring``), so hazard rules hardly
# ever see grad mode on inside a transformers model. These wrap the function and leave grad
# mode alone; naming them neutral shows what the rules would say if the engine knew that.
PATCH = ("import sys, gradguard.engine.common as c, gradguard.engine.definitions as d; "
         "c.NEUTRAL_DECORATORS = d.NEUTRAL_DECORATORS = c.NEUTRAL_DECORATORS | set(sys.argv.pop(1).split(',')); "
         "from gradguard.frontends.cli import main; main(prog_name='gradguard')")
TRANSFORMERS_DECORATORS = ("auto_docstring", "can_return_tuple", "merge_with_config_defaults",
                           "capture_outputs", "deprecate_kwarg", "use_kernel_forward_from_hub",
                           "use_kernelized_func", "add_start_docstrings_to_model_forward",
                           "replace_return_docstrings", "add_code_sample_docstrings",
                           "apply_forward_hook", "maybe_allow_in_graph", "use_kernel_func_from_hub")


def lint(folder: Path, files: list[str], timeout: float,
         neutral: tuple[str, ...] = ()) -> tuple[list[dict], float, str]:
    start = time.perf_counter()
    head = [sys.executable, "-c", PATCH, ",".join(neutral)] if neutral else [
        sys.executable, "-m", "gradguard"]
    command = [*head, "check", "--isolated", "--no-cache", "-j", "1", "--format", "json",
               "--exit-zero", "-q", *files]
    try:
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [], time.perf_counter() - start, f"lint timeout after {timeout:.0f} s"
    seconds = time.perf_counter() - start
    try:
        report = json.loads(done.stdout or "[]")
    except json.JSONDecodeError:
        return [], seconds, f"lint output not JSON: {done.stderr.strip()[-300:]}"
    findings = report if isinstance(report, list) else report.get("findings", report.get("results", []))
    return findings, seconds, ""


def normalise(finding: dict, run: Path, placed: dict[str, Path]) -> dict:
    """A finding of the JSON report, with its place in the installed source."""
    path = finding.get("filename") or finding.get("path") or ""
    rel = os.path.relpath(path, run) if os.path.isabs(path) else path
    location = finding.get("location")
    line = location.get("row") if isinstance(location, dict) else finding.get("line")
    top, _, rest = rel.partition(os.sep)
    source = str(placed[top] / rest) if top in placed and rest else rel
    return {"code": finding.get("code"), "message": finding.get("message"), "file": rel,
            "source": source, "line": line, "condition": finding.get("condition")}


def one(name: str, zoo: str, run: Path, placed: dict[str, Path], timeout: float,
        neutral: tuple[str, ...] = (), run_torch: bool = True) -> Result:
    result = Result(name, zoo)
    driver_name = f"drive_{safe(name)}.py"
    try:
        if zoo == "transformers":
            module, class_name, driver = transformers_case(name)
            result.config = "shrunk"
            folder = Path(*module.split(".")[:-1])  # transformers/models/bert
            files = sorted(str(p.relative_to(run)) for p in (run / folder).glob("modeling_*.py"))
        elif zoo == "diffusers":
            driver = diffusers_driver(name)
            files = [f"diffusers/models/{f}" for f in DIFFUSERS_FILES
                     if (run / "diffusers" / "models" / f).is_file()]
        else:
            package, _, linted = EXTRAS[name]
            driver = extras_driver(name)
            files = [f"{package}/{f}" for f in linted]
    except Exception as error:  # noqa: BLE001 - a model that cannot be set up is recorded
        result.status, result.reason = "failed-build", f"{type(error).__name__}: {error}"[:300]
        return result
    if not run_torch and (run / driver_name).is_file():  # the driver that ran before
        ok, reason = True, ""
    else:
        (run / driver_name).write_text(driver, encoding="utf-8")
        ok, reason, result.run_s = run_driver(run, driver_name, timeout)
    if not ok and zoo == "transformers":  # the defaults with fewer layers, if shrinking broke it
        try:
            _, _, driver = transformers_case(name, small=False)
            (run / driver_name).write_text(driver, encoding="utf-8")
            ok2, reason2, seconds = run_driver(run, driver_name, timeout)
            if ok2:
                ok, result.run_s, result.config = True, seconds, "defaults, 2 layers"
            else:
                reason = f"{reason} | defaults: {reason2}"
        except Exception as error:  # noqa: BLE001
            reason = f"{reason} | defaults: {type(error).__name__}: {error}"[:600]
    if not ok:
        result.status, result.reason = ("timeout" if "timeout" in reason else "failed-run"), reason
        return result
    result.files = [driver_name, *files]
    raw, result.lint_s, problem = lint(run, result.files, timeout, neutral)
    result.findings = [normalise(f, run, placed) for f in raw]
    result.status, result.reason = ("linted", "") if not problem else ("lint-failed", problem)
    return result


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("types", nargs="*", help="transformers model types (bert, gpt2, ...), "
                        "diffusers classes (UNet2DModel) or the extras' names (vit_pytorch.ViT)")
    parser.add_argument("--popular", action="store_true", help="the most-copied model types")
    parser.add_argument("--all-transformers", action="store_true", help="every type in CONFIG_MAPPING")
    parser.add_argument("--diffusers", action="store_true", help="diffusers UNets and VAE")
    parser.add_argument("--extras", action="store_true", help="vit-pytorch, x-transformers")
    parser.add_argument("--skip", nargs="*", default=[], help="model types to leave out")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per run and per lint")
    parser.add_argument("--out", type=Path, default=ROOT / ".bench" / "zoo")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--neutral", action="store_true",
                        help="an experiment: lint as if the engine knew transformers' and "
                        "diffusers' forward decorators leave grad mode alone")
    parser.add_argument("--no-run", action="store_true",
                        help="lint without running torch first (a driver run before is reused)")
    args = parser.parse_args(argv)

    cases: list[tuple[str, str]] = [
        (t, "diffusers" if t in DIFFUSERS else "extras" if t in EXTRAS else "transformers")
        for t in args.types]
    if args.popular:
        cases += [(t, "transformers") for t in POPULAR]
    if args.all_transformers:
        from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES
        cases += [(t, "transformers") for t in sorted(MODEL_MAPPING_NAMES)]
    if args.diffusers:
        cases += [(name, "diffusers") for name in DIFFUSERS]
    if args.extras:
        cases += [(name, "extras") for name in EXTRAS if importlib.util.find_spec(EXTRAS[name][0])]
    neutral = TRANSFORMERS_DECORATORS if args.neutral else ()
    cases = list(dict.fromkeys(c for c in cases if c[0] not in args.skip))
    run = args.out.resolve()
    run.mkdir(parents=True, exist_ok=True)
    placed = place_libraries(run, ["transformers", "diffusers", "vit_pytorch", "x_transformers"])

    results = []
    for name, zoo in cases:
        result = one(name, zoo, run, placed, args.timeout, neutral, not args.no_run)
        results.append(result)
        codes = ",".join(sorted({f["code"] for f in result.findings})) or "-"
        print(f"{name:34} {result.status:12} run {result.run_s:6.1f}s lint {result.lint_s:6.1f}s "
              f"{len(result.findings):3} findings {codes} {result.reason[:90]}", flush=True)
        if args.json:  # kept up to date: a long run can be stopped and read
            args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    linted = [r for r in results if r.status == "linted"]
    print(f"\n{len(results)} architectures, {len(linted)} built, ran clean and linted; "
          f"{sum(len(r.findings) for r in linted)} findings, "
          f"{sum(len(r.hazards()) for r in linted)} of hazard rules or errors")
    for r in linted:
        for f in r.findings:
            kind = ("TRUE" if confirmed(f) else "HAZARD") if f["code"] in HAZARDS | ERRORS \
                else "silent"
            print(f"  {kind} {r.name}: {f['source']}:{f['line']}: {f['code']} {f['message']}")
    return 1 if any(r.hazards() for r in linted) else 0


if __name__ == "__main__":
    sys.exit(main())
