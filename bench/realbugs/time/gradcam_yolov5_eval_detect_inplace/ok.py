"""GradCAM on YOLOv5 loaded with inplace=False: Detect decodes the boxes out of place, so the
sigmoid output the score's backward needs is never written.
"""
import torch
import torch.nn as nn


class Detect(nn.Module):
    def __init__(self, nc=7, na=3, ch=8, stride=2., inplace=True):
        super().__init__()
        self.nc, self.no, self.na, self.stride = nc, nc + 5, na, stride
        self.inplace = inplace
        self.anchor_grid = torch.ones(1, na, 1, 1, 2) * 4
        self.m = nn.Conv2d(ch, self.no * self.na, 1)

    def forward(self, x):
        x = self.m(x)
        bs, _, ny, nx = x.shape
        x = x.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
        if self.training:
            return x
        yv, xv = torch.meshgrid([torch.arange(ny), torch.arange(nx)], indexing='ij')
        grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
        y = x.sigmoid()
        if self.inplace:
            y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * self.stride
            y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * self.anchor_grid
        else:
            xy = (y[..., 0:2] * 2 - 0.5 + grid) * self.stride
            wh = (y[..., 2:4] * 2) ** 2 * self.anchor_grid
            y = torch.cat((xy, wh, y[..., 4:]), -1)
        return y.view(bs, -1, self.no), x


class YOLO(nn.Module):
    def __init__(self, inplace=True):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.SiLU())
        self.detect = Detect(inplace=inplace)

    def forward(self, x):
        return self.detect(self.backbone(x))


class ActivationsAndGradients:
    def __init__(self, model, target_layers):
        self.model, self.activations, self.gradients = model, [], []
        for target_layer in target_layers:
            target_layer.register_forward_hook(self.save_activation)

    def save_activation(self, module, input, output):
        self.activations.append(output.detach())
        output.register_hook(lambda grad: self.gradients.insert(0, grad.detach()))

    def __call__(self, x):
        self.gradients, self.activations = [], []
        return self.model(x)


class GradCAM:
    def __init__(self, model, target_layers):
        self.model = model.eval()
        self.activations_and_grads = ActivationsAndGradients(self.model, target_layers)

    def get_loss(self, output, target_category):
        return output[0][0, :, 5 + target_category].max()

    def __call__(self, input_tensor, target_category):
        output = self.activations_and_grads(input_tensor)
        self.model.zero_grad()
        loss = self.get_loss(output, target_category)
        loss.backward(retain_graph=True)
        weights = self.activations_and_grads.gradients[0].mean(dim=(2, 3), keepdim=True)
        return torch.relu((weights * self.activations_and_grads.activations[0]).sum(dim=1))


torch.manual_seed(0)
model = YOLO(inplace=False)
cam = GradCAM(model, target_layers=[model.backbone[-1]])
grayscale_cam = cam(torch.rand(1, 3, 8, 8), target_category=2)
