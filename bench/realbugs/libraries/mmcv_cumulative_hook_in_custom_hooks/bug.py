"""mmdet config adds mmcv's GradientCumulativeOptimizerHook as a custom hook while the base schedule's
optimizer_config still builds the default OptimizerHook: both hooks backward the same iteration loss.

Source: https://github.com/open-mmlab/mmcv/issues/1379
Shape: libraries
Symptom: Trying to backward through the graph a second time
"""
import torch
from torch import nn

# --- mmcv 1.3.14 (mmcv/runner/hooks/hook.py, hooks/optimizer.py, base_runner.py, epoch_based_runner.py) ---
PRIORITIES = {"ABOVE_NORMAL": 40, "NORMAL": 50}
class Hook:
    def every_n_iters(self, runner, n):
        return (runner.iter + 1) % n == 0 if n > 0 else False

class OptimizerHook(Hook):
    def __init__(self, grad_clip=None):
        self.grad_clip = grad_clip  # (clip_grads left out)
    def after_train_iter(self, runner):
        runner.optimizer.zero_grad()
        runner.outputs['loss'].backward()
        runner.optimizer.step()

class GradientCumulativeOptimizerHook(OptimizerHook):
    def __init__(self, cumulative_iters=1, **kwargs):
        super().__init__(**kwargs)
        self.cumulative_iters = cumulative_iters
    def after_train_iter(self, runner):
        loss = runner.outputs['loss'] / self.cumulative_iters
        loss.backward()
        if self.every_n_iters(runner, self.cumulative_iters) or runner.iter + 1 == runner.max_iters:
            runner.optimizer.step()
            runner.optimizer.zero_grad()

HOOKS = {"OptimizerHook": OptimizerHook, "GradientCumulativeOptimizerHook": GradientCumulativeOptimizerHook}
def build_from_cfg(cfg, registry):  # mmcv/utils/registry.py
    args = dict(cfg)
    return registry[args.pop("type")](**args)

class EpochBasedRunner:
    def __init__(self, model, optimizer, max_iters):
        self.model, self.optimizer, self.max_iters, self.iter, self._hooks = model, optimizer, max_iters, 0, []

    def register_hook(self, hook, priority="NORMAL"):
        hook.priority = PRIORITIES[priority]
        self._hooks = sorted(self._hooks + [hook], key=lambda h: h.priority)

    def register_optimizer_hook(self, optimizer_config):
        optimizer_config.setdefault("type", "OptimizerHook")
        self.register_hook(build_from_cfg(optimizer_config, HOOKS), priority="ABOVE_NORMAL")

    def train(self, data_loader):
        for data_batch in data_loader:
            self.outputs = self.model.train_step(data_batch, self.optimizer)  # run_iter
            for hook in self._hooks:  # call_hook('after_train_iter')
                hook.after_train_iter(self)
            self.iter += 1

# --- user side: a tiny detector, the config, and mmdet 2.x apis/train.py train_detector ---
class TinyDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone, self.head = nn.Sequential(nn.Linear(8, 16), nn.ReLU()), nn.Linear(16, 1)

    def train_step(self, data, optimizer):  # mmdet BaseDetector.train_step returns dict(loss=..., ...)
        loss = (self.head(self.backbone(data["img"])) - data["gt"]).pow(2).mean()
        return dict(loss=loss, num_samples=len(data["img"]))

optimizer_config = dict(grad_clip=None)  # configs/_base_/schedules/schedule_1x.py
custom_hooks = [dict(type="GradientCumulativeOptimizerHook", cumulative_iters=4)]  # culprit: -

model = TinyDetector()
runner = EpochBasedRunner(model, torch.optim.SGD(model.parameters(), lr=0.01), max_iters=8)
runner.register_optimizer_hook(optimizer_config)
for hook_cfg in custom_hooks:
    hook_cfg = hook_cfg.copy()
    priority = hook_cfg.pop("priority", "NORMAL")
    runner.register_hook(build_from_cfg(hook_cfg, HOOKS), priority=priority)
runner.train([dict(img=torch.randn(4, 8), gt=torch.randn(4, 1)) for _ in range(8)])
