"""VoxelPose's train_3d with the three losses backpropagated together in each iteration
(the nearest correct shape), so no loss outlives its graph or an optimizer step.
"""
import torch
import torch.nn as nn


class MultiPersonPoseNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU())
        self.root_net = nn.Sequential(nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
        self.pose_net = nn.Sequential(nn.Flatten(), nn.Linear(4 * 6 * 6, 9))

    def forward(self, views, targets_2d, targets_3d):
        heatmaps = self.backbone(views)
        loss_2d = (heatmaps.mean(1) - targets_2d).pow(2).mean()
        grid_centers = self.root_net(heatmaps)
        loss_cord = (grid_centers - targets_3d[:, :3]).abs().mean()
        pred = self.pose_net(heatmaps)
        loss_3d = (pred - targets_3d).abs().mean()
        return pred, heatmaps, grid_centers, loss_2d, loss_3d, loss_cord


def train_3d(model, optimizer, loader):
    model.train()
    for i, (inputs, targets_2d, targets_3d) in enumerate(loader):
        pred, heatmaps, grid_centers, loss_2d, loss_3d, loss_cord = model(inputs, targets_2d, targets_3d)
        loss_2d, loss_3d, loss_cord = loss_2d.mean(), loss_3d.mean(), loss_cord.mean()

        optimizer.zero_grad()
        (loss_2d + loss_3d + loss_cord).backward()
        optimizer.step()


torch.manual_seed(0)
model = MultiPersonPoseNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
loader = [(torch.randn(2, 3, 6, 6), torch.rand(2, 6, 6), torch.randn(2, 9)) for _ in range(4)]
train_3d(model, optimizer, loader)
