"""GG311 at run time (gradguard.verify.missing_grads): at each ``optimizer.step()``, the
parameters it updates that received no gradient, reported at the operation that cut them
off from the loss, or at the step as unused.

Each program below is a small, complete training step run as a script under
``run_path``; torch itself is asked too (``_missing_per_torch``, without the monitor): a
bug's optimizer really holds parameters whose ``.grad`` is None after its step, a
near-miss's stepped parameters all have one.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gradguard.verify.monitor import MONITORED_CODES, Monitor, run_path  # noqa: E402

# --------------------------------------------------------------------------- bugs: cuts

WEIGHT_DROP_DATA = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class WeightDrop(nn.Module):
        def __init__(self, module, p=0.5):
            super().__init__()
            self.module, self.p = module, p
            raw = module.weight
            del module._parameters["weight"]
            self.weight_raw = nn.Parameter(raw.data.clone())

        def forward(self, x):
            dropped = F.dropout(self.weight_raw.data, self.p, self.training)  # cut
            self.module.weight = dropped
            return self.module(x)


    torch.manual_seed(0)
    model = nn.Sequential(WeightDrop(nn.Linear(4, 4)), nn.ReLU(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        opt.step()  # step
"""

TENSOR_OF_LOGPROBS = """
    import torch
    import torch.nn as nn


    def rollout(policy, states):
        log_probs = []
        for s in states:
            dist = torch.distributions.Categorical(logits=policy(s))
            log_probs.append(dist.log_prob(dist.sample()))
        return torch.tensor(log_probs)  # cut


    torch.manual_seed(0)
    policy, value = nn.Linear(4, 2), nn.Linear(4, 1)
    opt = torch.optim.Adam(list(policy.parameters()) + list(value.parameters()), lr=1e-3)
    states = torch.randn(5, 4)
    returns = torch.randn(5)
    log_probs = rollout(policy, states)
    advantage = returns - value(states).squeeze(-1)
    loss = -(log_probs * advantage.detach()).sum() + advantage.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()  # step
"""

CLONE_DETACH_LOGITS = """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    body = nn.Linear(4, 8)
    policy_head, value_head = nn.Linear(8, 3), nn.Linear(8, 1)
    params = [*body.parameters(), *policy_head.parameters(), *value_head.parameters()]
    opt = torch.optim.SGD(params, lr=0.1)
    x, legal = torch.randn(6, 4), torch.tensor([True, False, True])
    h = body(x).relu()
    logits = policy_head(h)
    masked = logits.clone().detach()  # cut
    masked[:, ~legal] = float("-inf")
    dist = torch.distributions.Categorical(logits=masked)
    action = dist.sample()
    loss = -(dist.log_prob(action) * 0.5).mean() + value_head(h).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()  # step
"""

ITEM_IN_A_HELPER = """
    import torch
    import torch.nn as nn


    def temperature(gate, x):
        return gate(x).sigmoid().mean().item()  # cut


    torch.manual_seed(0)
    gate, net = nn.Linear(4, 1), nn.Linear(4, 2)
    opt = torch.optim.SGD([*gate.parameters(), *net.parameters()], lr=0.1)
    x = torch.randn(8, 4)
    loss = (net(x) / temperature(gate, x)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()  # step
"""

FORWARD_UNDER_NO_GRAD = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8))
            self.head = nn.Linear(8, 1)

        def forward(self, x):
            with torch.no_grad():
                feats = self.backbone(x)  # cut
            return self.head(feats)


    torch.manual_seed(0)
    model = Model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        opt.step()  # step
"""

UNUSED_LAYER = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Linear(4, 8)
            self.decoder = nn.Linear(8, 1)
            self.auxiliary = nn.Linear(8, 3)  # never called

        def forward(self, x):
            return self.decoder(self.encoder(x).relu())


    torch.manual_seed(0)
    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    opt.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    opt.step()  # step
"""

NEW_TENSOR_OF_LOGITS = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.manual_seed(0)
    student, temperature = nn.Linear(8, 4), nn.Parameter(torch.ones(()))
    opt = torch.optim.SGD([*student.parameters(), temperature], lr=0.1)
    x, soft_targets = torch.randn(6, 8), torch.softmax(torch.randn(6, 4), dim=1)
    out = student(x)
    logits = out.new_tensor(out, requires_grad=True)  # cut
    loss = F.kl_div(F.log_softmax(logits / temperature, dim=1), soft_targets, reduction="batchmean")
    opt.zero_grad()
    loss.backward()
    opt.step()  # step
"""

GAN_FAKE_DETACHED_FOR_BOTH = """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    G, D = nn.Linear(2, 4), nn.Sequential(nn.Linear(4, 1))
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
    head = nn.Linear(4, 1)  # a generator loss term of its own, stepped with G
    opt_g.add_param_group({"params": head.parameters()})
    bce = nn.BCEWithLogitsLoss()
    real, z = torch.randn(8, 4), torch.randn(8, 2)
    fake = G(z).detach()  # cut
    opt_d.zero_grad()
    d_loss = bce(D(real), torch.ones(8, 1)) + bce(D(fake), torch.zeros(8, 1))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    (bce(D(fake), torch.ones(8, 1)) + head(fake).pow(2).mean()).backward()
    opt_g.step()  # step
"""

UNUSED_LAYER_INITIALISED_THROUGH_DATA = UNUSED_LAYER.replace(
    "    model = Model()\n",
    "    model = Model()\n    for p in model.parameters():\n        p.data.normal_(0, 0.02)  # a write, not a cut\n")

# --------------------------------------------------------------------------- near-misses

FROZEN_IN_THE_OPTIMIZER = """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    for p in model[0].parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # holds the frozen layer too
    opt.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    opt.step()
"""

GAN_STEPS = """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    G, D = nn.Linear(2, 4), nn.Sequential(nn.Linear(4, 1))
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
    bce = nn.BCEWithLogitsLoss()
    for _ in range(2):
        real, z = torch.randn(8, 4), torch.randn(8, 2)
        fake = G(z)
        opt_d.zero_grad()
        d_loss = bce(D(real), torch.ones(8, 1)) + bce(D(fake.detach()), torch.zeros(8, 1))
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        bce(D(fake), torch.ones(8, 1)).backward()
        opt_g.step()
"""

TARGET_AND_TEACHER = """
    import copy

    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    target = copy.deepcopy(critic)
    teacher = copy.deepcopy(critic)
    opt = torch.optim.SGD(critic.parameters(), lr=0.1)
    for _ in range(2):
        s, s2, r = torch.randn(8, 4), torch.randn(8, 4), torch.randn(8, 1)
        y = (r + 0.9 * target(s2)).detach()  # a detached target
        with torch.no_grad():
            soft = teacher(s)  # an EMA teacher, under no_grad
        loss = (critic(s) - y).pow(2).mean() + (critic(s) - soft).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for t, c in zip(teacher.parameters(), critic.parameters()):
                t.mul_(0.99).add_(c.detach(), alpha=0.01)
"""

VALIDATION_UNDER_NO_GRAD = """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    for p in model.parameters():
        p.data.mul_(0.5)  # an initialisation through .data: a write, no cut
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        print(loss.item(), model[0].weight.detach().norm().item())
        opt.step()
        with torch.no_grad():
            print(model(torch.randn(8, 4)).mean().item())
"""

CLOSURE_AND_PARTIAL_BACKWARD = """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    x = torch.randn(8, 4)
    opt = torch.optim.LBFGS(model.parameters(), max_iter=2)

    def closure():
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        return loss

    opt.step(closure)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    sgd.zero_grad()
    model(x).pow(2).mean().backward(inputs=list(model[2].parameters()))  # only the last layer
    sgd.step()
    for p in model.parameters():  # gradients made by hand: no backward ran
        p.grad = None
    model[2].weight.grad = torch.ones_like(model[2].weight)
    sgd.step()
"""


def _program(tmp_path: Path, source: str) -> tuple[str, str]:
    text = textwrap.dedent(source).lstrip("\n")
    path = tmp_path / "program.py"
    path.write_text(text)
    return str(path), text


def _line(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.rstrip().endswith(marker))


def _events(tmp_path: Path, source: str, **options) -> tuple[list, str]:
    path, text = _program(tmp_path, source)
    if options:
        with Monitor(**options) as watch:
            import runpy  # noqa: PLC0415

            runpy.run_path(path, run_name="__main__")
        events, error = watch.events, None
    else:
        events, error = run_path(path, [path])
    assert error is None, error
    return [e for e in events if e.code == "GG311"], text


def test_gg311_is_monitored() -> None:
    assert "GG311" in MONITORED_CODES


@pytest.mark.parametrize("source, cut, named", [
    (WEIGHT_DROP_DATA, "`.data`", ["`0.weight_raw`"]),
    (TENSOR_OF_LOGPROBS, "`torch.tensor`", ["`Linear.weight`", "`Linear.bias`"]),
    (CLONE_DETACH_LOGITS, "`.detach()`", ["`Linear.weight`", "`Linear.bias`"]),
    (ITEM_IN_A_HELPER, "`.item()`", ["`Linear.weight`", "`Linear.bias`"]),
    (FORWARD_UNDER_NO_GRAD, "`Sequential` ran here with gradients off", ["`backbone.0.weight`",
                                                                         "`backbone.2.bias`"]),
    (GAN_FAKE_DETACHED_FOR_BOTH, "`.detach()`", ["`Linear.weight`", "`Linear.bias`"]),
    (NEW_TENSOR_OF_LOGITS, "`.new_tensor`", ["`Linear.weight`", "`Linear.bias`"]),
], ids=["data", "tensor-of-logprobs", "clone-detach", "item", "no-grad", "gan-fake-detached", "new-tensor"])
def test_a_cut_is_reported_at_the_operation_that_cut(tmp_path, source, cut, named) -> None:
    events, text = _events(tmp_path, source)
    assert [(e.line, e.related_line) for e in events] == [(_line(text, "# cut"), _line(text, "# step"))]
    message = events[0].message
    assert message.startswith(cut), message
    assert all(name in message for name in named), message
    assert "with no gradient" in message


def _missing_per_torch(source: str) -> int:
    """Run ``source`` without the monitor: how many parameters its optimizers hold that
    require grad and have no gradient at the end (after its last step)."""
    namespace: dict = {"__name__": "__main__"}
    exec(compile(textwrap.dedent(source), "<program>", "exec"), namespace)  # noqa: S102 - the test's own
    optimizers = [v for v in namespace.values() if isinstance(v, torch.optim.Optimizer)]
    assert optimizers
    return sum(p.requires_grad and p.grad is None
               for opt in optimizers for group in opt.param_groups for p in group["params"])


@pytest.mark.parametrize("source", [WEIGHT_DROP_DATA, TENSOR_OF_LOGPROBS, CLONE_DETACH_LOGITS,
                                    ITEM_IN_A_HELPER, FORWARD_UNDER_NO_GRAD, GAN_FAKE_DETACHED_FOR_BOTH,
                                    NEW_TENSOR_OF_LOGITS, UNUSED_LAYER])
def test_torch_confirms_a_bug_steps_parameters_without_gradient(source) -> None:
    assert _missing_per_torch(source) > 0


@pytest.mark.parametrize("source", [FROZEN_IN_THE_OPTIMIZER, GAN_STEPS, TARGET_AND_TEACHER,
                                    VALIDATION_UNDER_NO_GRAD])
def test_torch_confirms_a_near_miss_steps_every_parameter_with_its_gradient(source) -> None:
    assert _missing_per_torch(source) == 0


def test_an_unused_layer_is_reported_at_the_step_apart(tmp_path) -> None:
    events, text = _events(tmp_path, UNUSED_LAYER)
    assert [e.line for e in events] == [_line(text, "# step")]
    message = events[0].message
    assert "`auxiliary.weight`, `auxiliary.bias`, which no forward used" in message
    assert "unused parameters" in message and "encoder" not in message


def test_a_write_through_data_is_no_cut(tmp_path) -> None:
    events, text = _events(tmp_path, UNUSED_LAYER_INITIALISED_THROUGH_DATA)
    assert [e.line for e in events] == [_line(text, "# step")]
    assert "which no forward used" in events[0].message


def test_the_option_turns_the_unused_report_off(tmp_path) -> None:
    assert _events(tmp_path, UNUSED_LAYER, report_unused=False)[0] == []
    # ... and leaves the cuts alone
    assert len(_events(tmp_path, WEIGHT_DROP_DATA, report_unused=False)[0]) == 1


@pytest.mark.parametrize("source", [FROZEN_IN_THE_OPTIMIZER, GAN_STEPS, TARGET_AND_TEACHER,
                                    VALIDATION_UNDER_NO_GRAD, CLOSURE_AND_PARTIAL_BACKWARD],
                         ids=["frozen", "gan", "target-and-teacher", "validation", "closure-partial"])
def test_near_misses_report_nothing(tmp_path, source) -> None:
    assert _events(tmp_path, source)[0] == []


def test_an_unused_layer_under_a_closure_is_seen_after_it(tmp_path) -> None:
    source = UNUSED_LAYER.replace(
        "    opt.zero_grad()\n    model(torch.randn(8, 4)).pow(2).mean().backward()\n    opt.step()  # step",
        "    def closure():\n        opt.zero_grad()\n        loss = model(torch.randn(8, 4)).pow(2).mean()\n"
        "        loss.backward()\n        return loss\n    opt.step(closure)  # step")
    events, text = _events(tmp_path, source)
    assert [e.line for e in events] == [_line(text, "# step")]


def test_the_hooks_are_removed_on_exit() -> None:
    from torch.nn.modules import module as nn_module  # noqa: PLC0415
    from torch.optim import optimizer  # noqa: PLC0415

    before = (len(optimizer._global_optimizer_pre_hooks), len(optimizer._global_optimizer_post_hooks),
              len(nn_module._global_forward_pre_hooks))
    with Monitor():
        assert len(nn_module._global_forward_pre_hooks) == before[2] + 1
    assert (len(optimizer._global_optimizer_pre_hooks), len(optimizer._global_optimizer_post_hooks),
            len(nn_module._global_forward_pre_hooks)) == before
