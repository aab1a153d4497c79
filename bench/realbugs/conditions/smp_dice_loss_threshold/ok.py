"""segmentation_models.pytorch as the library keeps it: DiceLoss trains on the soft
prediction (no threshold), and the threshold binarizes only the metric.
"""
import torch
import torch.nn as nn


def _threshold(x, threshold=None):
    if threshold is not None:
        return (x > threshold).type(x.dtype)
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

    def __init__(self, eps=1.0, beta=1.0, activation=None):
        super().__init__()
        self.eps, self.beta = eps, beta
        self.activation = activation or nn.Identity()

    def forward(self, y_pr, y_gt):
        y_pr = self.activation(y_pr)
        return 1 - f_score(y_pr, y_gt, beta=self.beta, eps=self.eps, threshold=None)


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 1))
loss_fn = DiceLoss(activation=nn.Sigmoid())
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.randn(2, 3, 8, 8), (torch.rand(2, 1, 8, 8) > 0.5).float()
optimizer.zero_grad()
y_pr = model(x)
loss = loss_fn(y_pr, y)
loss.backward()
optimizer.step()
with torch.no_grad():
    fscore = f_score(torch.sigmoid(y_pr), y, threshold=0.5)
grad = model[0].weight.grad
assert grad is not None and grad.abs().sum() > 0, "dice loss with a threshold does not train the model"
