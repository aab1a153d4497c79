"""Probe of transformers' Trainer with a user subclass overriding compute_loss, on a tiny
module and in-memory data (no download): the grad mode, inference mode and module mode
compute_loss runs in during train(), evaluate() and predict(); the order of backward,
optimizer step and zero_grad (seen as whether the parameter's gradient is cleared and its
value changed before each micro-batch) with and without gradient accumulation; what
training_step hands back."""
import json
import tempfile

import torch
import torch.nn as nn
from transformers import Trainer, TrainingArguments


def record(event, **facts):
    facts.update(event=event, grad=torch.is_grad_enabled(),
                 inference=torch.is_inference_mode_enabled())
    print("PROBE " + json.dumps(facts, sort_keys=True), flush=True)


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 1)

    def forward(self, x, labels=None):
        prediction = self.linear(x).squeeze(-1)
        loss = nn.functional.mse_loss(prediction, labels) if labels is not None else None
        return {"loss": loss, "prediction": prediction}


class ProbingTrainer(Trainer):
    phase = "train"
    last_weight = None

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        weight = model.linear.weight
        changed = self.last_weight is not None and not torch.equal(self.last_weight, weight)
        self.last_weight = weight.detach().clone()
        outputs = model(**inputs)
        loss = outputs["loss"]
        record("compute_loss", phase=self.phase, training=model.training,
               return_outputs=return_outputs, grad_is_none=weight.grad is None,
               weight_changed=changed, loss_requires_grad=loss.requires_grad)
        return (loss, outputs) if return_outputs else loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        returned = super().training_step(model, inputs, num_items_in_batch)
        record("training_step_returned", requires_grad=returned.requires_grad,
               leaf=returned.is_leaf, has_grad=model.linear.weight.grad is not None)
        return returned


def dataset(n):
    torch.manual_seed(0)
    return [{"x": torch.randn(3), "labels": torch.randn(())} for _ in range(n)]


def run(accumulation):
    with tempfile.TemporaryDirectory() as output_dir:
        args = TrainingArguments(output_dir=output_dir, per_device_train_batch_size=2,
                                 per_device_eval_batch_size=2, num_train_epochs=1,
                                 gradient_accumulation_steps=accumulation, learning_rate=0.1,
                                 report_to="none", save_strategy="no", logging_strategy="no",
                                 use_cpu=True, disable_tqdm=True)
        torch.manual_seed(0)
        trainer = ProbingTrainer(model=Regressor(), args=args, train_dataset=dataset(8),
                                 eval_dataset=dataset(4))
        record("run", accumulation=accumulation)
        trainer.train()
        trainer.phase = "evaluate"
        trainer.evaluate()
        trainer.phase = "predict"
        trainer.predict(dataset(2))
        record("after", training=trainer.model.training)


run(1)
run(2)
