"""EvolveGCN-O: the LSTM-evolved weight is re-wrapped as torch.nn.Parameter(W) before the graph convolution, so the LSTM that evolves it never learns

Source: https://github.com/benedekrozemberczki/pytorch_geometric_temporal/issues/80
Shape: cuts
Symptom: the weight-evolving LSTM never gets a gradient
"""
import torch
from torch.nn import LSTM

torch.manual_seed(0)


class GCNConv(torch.nn.Module):
    """Stand-in for torch_geometric.nn.GCNConv (bias=False): D^-1/2 (A+I) D^-1/2 X W."""
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(in_channels, out_channels) * 0.1)

    def forward(self, X, edge_index, edge_weight=None):
        n = X.shape[0]
        A = torch.eye(n)
        A[edge_index[0], edge_index[1]] = 1.0 if edge_weight is None else edge_weight
        d = A.sum(1).pow(-0.5)
        return (d[:, None] * A * d[None, :]) @ (X @ self.weight)


class EvolveGCNO(torch.nn.Module):
    """After torch_geometric_temporal/nn/recurrent/evolvegcno.py (2021)."""
    def __init__(self, in_channels):
        super().__init__()
        self.in_channels = in_channels
        self.recurrent_layer = LSTM(input_size=in_channels, hidden_size=in_channels, num_layers=1)
        self.conv_layer = GCNConv(in_channels=in_channels, out_channels=in_channels)

    def forward(self, X, edge_index, edge_weight=None):
        W = self.conv_layer.weight[None, :, :]
        W, _ = self.recurrent_layer(W)
        self.conv_layer.weight = torch.nn.Parameter(W.squeeze())  # culprit: GG311
        X = self.conv_layer(X, edge_index, edge_weight)
        return X


class RecurrentGCN(torch.nn.Module):
    def __init__(self, node_features):
        super().__init__()
        self.recurrent = EvolveGCNO(node_features)
        self.linear = torch.nn.Linear(node_features, 1)

    def forward(self, x, edge_index, edge_weight=None):
        h = torch.relu(self.recurrent(x, edge_index, edge_weight))
        return self.linear(h)


model = RecurrentGCN(node_features=4)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
edge_index = torch.tensor([[0, 1, 2, 3, 4], [1, 2, 3, 4, 0]])
for snapshot in range(3):
    x, y = torch.randn(5, 4), torch.randn(5, 1)
    optimizer.zero_grad()
    cost = torch.mean((model(x, edge_index) - y) ** 2)
    cost.backward()
    assert all(p.grad is not None for p in model.recurrent.recurrent_layer.parameters()), "the weight-evolving LSTM never gets a gradient"
    optimizer.step()
