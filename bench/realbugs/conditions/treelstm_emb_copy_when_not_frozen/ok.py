"""treelstm.pytorch after the pull request: the model is built without the vectors and the
training script plugs them into the embedding matrix through `.data`, outside autograd.
"""
import argparse

import torch
import torch.nn as nn


class SimilarityTreeLSTM(nn.Module):
    def __init__(self, vocab_size, in_dim, mem_dim, hidden_dim, num_classes, sparsity, freeze):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, in_dim, padding_idx=0, sparse=sparsity)
        if freeze:
            self.emb.weight.requires_grad = False
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
    model = SimilarityTreeLSTM(vocab_size, input_dim, 8, 8, 5, False, args.freeze_embed)
    model.emb.weight.data.copy_(emb)
    output = model(torch.tensor([1, 2, 3]), torch.tensor([4, 5]))
    output.sum().backward()


torch.manual_seed(0)
main()
