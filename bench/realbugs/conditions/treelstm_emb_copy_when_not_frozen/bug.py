"""treelstm.pytorch's SimilarityTreeLSTM copies the GloVe vectors into its embedding in
__init__ with `self.emb.weight.copy_(init_emb)`; unless --freeze_embed turned
requires_grad off, the weight is a leaf that requires grad and the copy raises.

Source: https://github.com/dasguptar/treelstm.pytorch/pull/26
Shape: conditions
Symptom: a leaf Variable that requires grad is being used in an in-place operation
"""
import argparse

import torch
import torch.nn as nn


class SimilarityTreeLSTM(nn.Module):
    def __init__(self, vocab_size, in_dim, mem_dim, hidden_dim, num_classes, sparsity, freeze, init_emb):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, in_dim, padding_idx=0, sparse=sparsity)
        if freeze:
            self.emb.weight.requires_grad = False
        self.emb.weight.copy_(init_emb)  # culprit: GG101
        self.childsumtreelstm = nn.LSTMCell(in_dim, mem_dim)
        self.similarity = nn.Sequential(nn.Linear(2 * mem_dim, hidden_dim), nn.Sigmoid(),
                                        nn.Linear(hidden_dim, num_classes))

    def forward(self, linputs, rinputs):
        lstate = self.childsumtreelstm(self.emb(linputs))[0].mean(0)
        rstate = self.childsumtreelstm(self.emb(rinputs))[0].mean(0)
        return self.similarity(torch.cat([lstate * rstate, (lstate - rstate).abs()]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--freeze_embed', action='store_true')
    args = parser.parse_args([])
    vocab_size, input_dim = 10, 6
    emb = torch.zeros(vocab_size, input_dim).normal_(0, 0.05)
    emb[0].zero_()
    model = SimilarityTreeLSTM(vocab_size, input_dim, 8, 8, 5, False, args.freeze_embed, emb)
    output = model(torch.tensor([1, 2, 3]), torch.tensor([4, 5]))
    output.sum().backward()


torch.manual_seed(0)
main()
