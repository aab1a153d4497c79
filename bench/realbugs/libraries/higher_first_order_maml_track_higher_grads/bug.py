"""First-order MAML with higher: innerloop_ctx(..., track_higher_grads=False) makes the
differentiable optimizer detach the fast weights at every step, so the query loss's
backward stops at the fmodel's own parameters and the meta-model's .grad stays None.

Source: https://github.com/facebookresearch/higher/issues/129
Shape: libraries
Symptom: the meta-learner never gets a gradient
"""
import higher
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv3x3(in_channels, out_channels):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1),
        nn.BatchNorm2d(out_channels, momentum=1., track_running_stats=False),
        nn.ReLU(),
        nn.MaxPool2d(2))


torch.manual_seed(0)
n_way, hidden_size = 5, 8
model = nn.Sequential(conv3x3(1, hidden_size), conv3x3(hidden_size, hidden_size),
                      nn.Flatten(), nn.Linear(hidden_size * 7 * 7, n_way))
meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
inner_opt = torch.optim.SGD(model.parameters(), lr=1e-1)
spt_x, spt_y = torch.randn(n_way, 1, 28, 28), torch.arange(n_way)
qry_x, qry_y = torch.randn(2 * n_way, 1, 28, 28), torch.arange(n_way).repeat(2)

meta_opt.zero_grad()
with higher.innerloop_ctx(model, inner_opt, copy_initial_weights=False,
                          track_higher_grads=False) as (fmodel, diffopt):  # culprit: -
    for _ in range(2):
        diffopt.step(F.cross_entropy(fmodel(spt_x), spt_y))
    qry_loss = F.cross_entropy(fmodel(qry_x), qry_y)
    qry_loss.backward()
assert all(p.grad is not None for p in model.parameters()), "the meta-learner never gets a gradient"
meta_opt.step()
