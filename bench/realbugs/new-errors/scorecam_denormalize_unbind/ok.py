"""Score-CAM's denormalize as fixed in the thread: each channel is rewritten by index with
out-of-place mul and add, so no view made by unbind is modified.
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
    count = 0
    for channel, mean, std in zip(denormalized[0], means, stds):
        denormalized[0][count] = denormalized[0][count].mul(std)
        denormalized[0][count] = denormalized[0][count].add(mean)
        count += 1
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
