"""sentence-transformers v3 CachedGISTEmbedLoss crashes in Trainer evaluation: the GradCache
loss calls backward on its mini-batch losses even under the evaluation loop's torch.no_grad().

Source: https://github.com/huggingface/sentence-transformers/issues/2667
Shape: libraries
Symptom: element 0 of tensors does not require grad and does not have a grad_fn
"""
import torch
from torch import nn
from transformers import BertConfig, BertModel, Trainer, TrainingArguments


class TinySentenceTransformer(nn.Module):  # stands in for SentenceTransformer (Transformer + mean Pooling)
    def __init__(self):
        super().__init__()
        self.bert = BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32))

    def forward(self, features):
        return {"sentence_embedding": self.bert(input_ids=features["input_ids"]).last_hidden_state.mean(1)}


class CachedGISTEmbedLoss(nn.Module):  # sentence_transformers/losses/CachedGISTEmbedLoss.py, v3.0 pre-release
    def __init__(self, model, guide, temperature=0.01, mini_batch_size=2):
        super().__init__()
        self.model, self.guide, self.temperature, self.mini_batch_size = model, guide, temperature, mini_batch_size
        self.sim = nn.CosineSimilarity(dim=-1)

    def embed_minibatch_iter(self, sentence_feature, with_grad):
        for begin in range(0, sentence_feature["input_ids"].shape[0], self.mini_batch_size):
            mb = {"input_ids": sentence_feature["input_ids"][begin:begin + self.mini_batch_size]}
            with (torch.enable_grad() if with_grad else torch.no_grad()):
                reps = self.model(mb)["sentence_embedding"]
            with torch.no_grad():
                guide_reps = self.guide(mb)["sentence_embedding"]
            yield reps, guide_reps

    def calculate_loss_and_cache_gradients(self, reps, reps_guided):
        loss = self.calculate_loss(reps, reps_guided, with_backward=True)
        self.cache = [[r.grad for r in rs] for rs in reps]  # GradCache: d loss / d embeddings
        return loss.detach().requires_grad_()

    def calculate_loss(self, reps, reps_guided, with_backward=False):
        anchors, positives = torch.cat(reps[0]), torch.cat(reps[1])
        g_anchors, g_positives = torch.cat(reps_guided[0]), torch.cat(reps_guided[1])
        ap_sim = self.sim(anchors.unsqueeze(1), positives.unsqueeze(0))
        guided = self.sim(g_anchors.unsqueeze(1), g_positives.unsqueeze(0))
        mask = guided > guided.diagonal().view(-1, 1)  # the guide flags false negatives
        scores = ap_sim.masked_fill(mask, -torch.inf) / self.temperature
        loss_mbatch = nn.functional.cross_entropy(scores, torch.arange(len(scores)))
        if with_backward:
            loss_mbatch.backward()
            loss_mbatch = loss_mbatch.detach()
        return loss_mbatch

    def forward(self, sentence_features, labels):
        reps, reps_guided = [], []
        for sentence_feature in sentence_features:
            mbs = list(self.embed_minibatch_iter(sentence_feature, with_grad=False))
            reps.append([r.detach().requires_grad_() for r, _ in mbs])
            reps_guided.append([g.detach() for _, g in mbs])
        loss = self.calculate_loss_and_cache_gradients(reps, reps_guided)  # culprit: -
        return loss  # (the backward hook that re-embeds with grad is left out: evaluation never reaches it)


class SentenceTransformerTrainer(Trainer):  # sentence_transformers/trainer.py, v3.0: compute_loss
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        features = [{"input_ids": inputs["anchor_input_ids"]}, {"input_ids": inputs["positive_input_ids"]}]
        loss = self.loss(features, inputs["labels"])
        return (loss, {}) if return_outputs else loss


torch.manual_seed(0)
model, guide = TinySentenceTransformer(), TinySentenceTransformer()
data = [{"anchor_input_ids": torch.randint(0, 50, (6,)), "positive_input_ids": torch.randint(0, 50, (6,)),
         "label": 0} for _ in range(8)]
args = TrainingArguments(output_dir="/tmp/st_gist", per_device_eval_batch_size=4, label_names=["labels"], use_cpu=True,
                         remove_unused_columns=False, report_to=[], prediction_loss_only=True, disable_tqdm=True)
trainer = SentenceTransformerTrainer(model=model, args=args, eval_dataset=data)
trainer.loss = CachedGISTEmbedLoss(model, guide)
print(trainer.evaluate())
