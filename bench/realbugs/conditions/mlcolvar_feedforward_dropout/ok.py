"""mlcolvar FeedForward with the dropout layers made out of place (`inplace=False`), as the
issue asks: the ReLU outputs they read stay as the ReLUs saved them.
"""
from typing import Optional, Union

import torch


def parse_nn_options(options, n_layers, last_layer_activation):
    if isinstance(options, list):
        return options
    return [options] * (n_layers - 1) + [options if last_layer_activation else None]


class FeedForward(torch.nn.Module):
    def __init__(self, layers: list, activation: str = "relu",
                 dropout: Optional[Union[float, list]] = None,
                 batchnorm: Union[bool, list] = False, last_layer_activation: bool = False):
        super().__init__()
        n_layers = len(layers) - 1
        activation_list = parse_nn_options(activation, n_layers, last_layer_activation)
        dropout_list = parse_nn_options(dropout, n_layers, last_layer_activation)
        batchnorm_list = parse_nn_options(batchnorm, n_layers, last_layer_activation)

        modules = []
        for i in range(len(layers) - 1):
            modules.append(torch.nn.Linear(layers[i], layers[i + 1]))
            activ, drop, norm = activation_list[i], dropout_list[i], batchnorm_list[i]
            if activ is not None:
                modules.append(torch.nn.ReLU())
            if drop is not None:
                modules.append(torch.nn.Dropout(p=drop, inplace=False))
            if norm:
                modules.append(torch.nn.BatchNorm1d(layers[i + 1]))
        self.nn = torch.nn.Sequential(*modules)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.nn(x)


torch.manual_seed(0)
model = FeedForward([4, 16, 16, 1], dropout=[0.2, 0.4, None])
model.train()
loss = model(torch.randn(8, 4)).pow(2).mean()
loss.backward()
