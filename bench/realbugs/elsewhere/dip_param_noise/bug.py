"""deep-image-prior inpainting: the parameter noise rebinds the loop name, so it never lands.

Source: https://github.com/DmitryUlyanov/deep-image-prior/issues/67
Shape: elsewhere
Symptom: parameter noise was never applied
"""
import torch
from torch import nn

torch.manual_seed(0)
param_noise = True
reg_noise_std = 0.03
net = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(4, 1, 3, padding=1))
mse = nn.MSELoss()
net_input_saved = torch.rand(1, 2, 8, 8)
noise = net_input_saved.clone()
img_var = torch.rand(1, 1, 8, 8)
mask_var = (torch.rand(1, 1, 8, 8) > 0.3).float()
optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
i = 0


def closure():
    global i
    if param_noise:
        for n in [x for x in net.parameters() if len(x.size()) == 4]:
            n = n + n.detach().clone().normal_() * n.std() / 50  # culprit: -
    net_input = net_input_saved
    if reg_noise_std > 0:
        net_input = net_input_saved + (noise.normal_() * reg_noise_std)
    out = net(net_input)
    total_loss = mse(out * mask_var, img_var * mask_var)
    total_loss.backward()
    i += 1
    return total_loss


before = [p.detach().clone() for p in net.parameters() if p.dim() == 4]
optimizer.zero_grad()
closure()
after = [p.detach() for p in net.parameters() if p.dim() == 4]
changed = all(not torch.equal(b, a) for b, a in zip(before, after))
assert changed, "parameter noise was never applied"
