"""segmentation_models.pytorch: a threshold option added to DiceLoss binarizes the
prediction; to silence "element 0 of tensors does not require grad" the pull request
re-wraps the mask with torch.tensor(..., requires_grad=True), a new leaf, so the loss
backpropagates into that leaf and never reaches the model.

Source: https://github.com/qubvel-org/segmentation_models.pytorch/pull/611
Shape: conditions
Symptom: dice loss with a threshold does not train the model
"""
import torch
import torch.nn as nn


def _threshold(x, threshold=None):
    if threshold is not None:
        return torch.tensor((x > threshold).type(x.dtype), requires_grad=True)  # culprit: -
    else:
        return x


def f_score(pr, gt, beta=1, eps=1e-7, threshold=None):
    pr = _threshold(pr, threshold=threshold)
    tp = torch.sum(gt * pr)
    fp = torch.sum(pr) - tp
    fn = torch.sum(gt) - tp
    return ((1 + beta ** 2) * tp + eps) / ((1 + beta ** 2) * tp + beta ** 2 * fn + fp + eps)


class DiceLoss(nn.Module):
    __name__ = "dice_loss"

    def __init__(self, eps=1.0, beta=1.0, activation=None, threshold=None):
        super().__init__()
        self.eps, self.beta, self.threshold = eps, beta, threshold
        self.activation = activation or nn.Identity()

    def forward(self, y_pr, y_gt):
        y_pr = self.activation(y_pr)
        return 1 - f_score(y_pr, y_gt, beta=self.beta, eps=self.eps, threshold=self.threshold)


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 1))
loss_fn = DiceLoss(activation=nn.Sigmoid(), threshold=0.5)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.randn(2, 3, 8, 8), (torch.rand(2, 1, 8, 8) > 0.5).float()
optimizer.zero_grad()
loss = loss_fn(model(x), y)
loss.backward()
optimizer.step()
grad = model[0].weight.grad
assert grad is not None and grad.abs().sum() > 0, "dice loss with a threshold does not train the model"
