"""Score-CAM's denormalize: iterating over the image's channels yields views made by
unbind, and each is scaled in place; the image requires grad (the CAM needed it), so
torch refuses the in-place write into a multi-output view.

Source: https://github.com/haofanwang/Score-CAM/issues/28
Shape: new-errors
Symptom: is a view and is being modified inplace
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def apply_transforms(image):
    means, stds = torch.tensor([0.485, 0.456, 0.406]), torch.tensor([0.229, 0.224, 0.225])
    tensor = (image - means[:, None, None]) / stds[:, None, None]
    return tensor.unsqueeze(0).requires_grad_(True)


def denormalize(tensor):
    means = [0.485, 0.456, 0.406]
    stds = [0.229, 0.224, 0.225]
    denormalized = tensor.clone()
    for channel, mean, std in zip(denormalized[0], means, stds):
        channel.mul_(std).add_(mean)  # culprit: GG203
    return denormalized


def basic_visualize(input_, gradients):
    input_ = denormalize(input_)
    return input_.squeeze(0).permute(1, 2, 0), gradients.squeeze()


class ScoreCAM:
    def __init__(self, model):
        self.model = model

    def __call__(self, input_):
        logit = self.model(input_)
        score = logit[:, logit.argmax()].squeeze()
        saliency = torch.autograd.grad(score, input_, retain_graph=True)[0]
        return F.relu(saliency.sum(1, keepdim=True))


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(4, 5))
input_ = apply_transforms(torch.rand(3, 8, 8))
scorecam_map = ScoreCAM(model)(input_)
image, heatmap = basic_visualize(input_.cpu(), scorecam_map.type(torch.FloatTensor).cpu())
