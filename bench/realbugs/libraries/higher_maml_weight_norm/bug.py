"""MAML on Omniglot with higher: a weight_norm network breaks the inner loop

The maml-omniglot example, with the conv layers wrapped in nn.utils.weight_norm.
The hook-based weight_norm stores `weight` on the module as a tensor computed once from
weight_g/weight_v; higher's patched fnet carries no forward pre-hooks, so every fnet call
reuses that one stored tensor and its single graph. The first task's qry_loss.backward()
frees it and the second task's backward walks into the freed graph.

Source: https://github.com/facebookresearch/higher/issues/14
Shape: libraries
Symptom: Trying to backward through the graph a second time
"""
import higher
import torch
import torch.nn.functional as F
from torch import nn

n_way, k_spt, k_qry, task_num = 3, 2, 2, 2


def make_net(device):
    return nn.Sequential(
        nn.utils.weight_norm(nn.Conv2d(1, 8, 3)),  # culprit: -
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2, 2),
        nn.utils.weight_norm(nn.Conv2d(8, 8, 3)),  # culprit: -
        nn.ReLU(inplace=True),
        nn.Flatten(),
        nn.Linear(8 * 2 * 2, n_way),
    ).to(device)


class DB:
    def next(self):
        x_spt = torch.randn(task_num, n_way * k_spt, 1, 10, 10)
        y_spt = torch.arange(n_way).repeat(k_spt).expand(task_num, -1)
        x_qry = torch.randn(task_num, n_way * k_qry, 1, 10, 10)
        y_qry = torch.arange(n_way).repeat(k_qry).expand(task_num, -1)
        return x_spt, y_spt, x_qry, y_qry


def train(db, net, device, meta_opt, epoch, n_train_iter=1):
    net.train()
    for batch_idx in range(n_train_iter):
        x_spt, y_spt, x_qry, y_qry = db.next()
        n_inner_iter = 2
        inner_opt = torch.optim.SGD(net.parameters(), lr=1e-1)
        qry_losses = []
        meta_opt.zero_grad()
        for i in range(task_num):
            with higher.innerloop_ctx(net, inner_opt, copy_initial_weights=False) as (fnet, diffopt):
                for _ in range(n_inner_iter):
                    spt_logits = fnet(x_spt[i])
                    spt_loss = F.cross_entropy(spt_logits, y_spt[i])
                    diffopt.step(spt_loss)
                qry_logits = fnet(x_qry[i])
                qry_loss = F.cross_entropy(qry_logits, y_qry[i])
                qry_losses.append(qry_loss.detach())
                qry_loss.backward()  # culprit: GG207
        meta_opt.step()
        print(f"[Epoch {epoch}] it {batch_idx} qry loss {sum(qry_losses).item() / task_num:.3f}")


def main():
    torch.manual_seed(0)
    device = torch.device("cpu")
    net = make_net(device)
    meta_opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    train(DB(), net, device, meta_opt, epoch=0)


if __name__ == "__main__":
    main()
