"""ROUGE for Hugging Face ``evaluate``, computed by rouge-pipeline (offline, exact rouge-score numbers).

``evaluate.load(pipeline.hf.METRIC_PATH)`` loads this file; ``compute`` takes the arguments of
evaluate's own rouge metric (``predictions``, ``references``: a text or a list of texts per
prediction, ``rouge_types``, ``use_aggregator``, ``use_stemmer``, ``tokenizer``) plus
:func:`pipeline.compute`'s scoring options (``profile``, ``language``, ``multi_ref``, ``alpha``,
``confidence``, ``n_boot``, ...).  The bootstrap is seeded by the module's ``seed``
(``evaluate.load(path, seed=42)``), as evaluate seeds its own.
"""
import datasets
import evaluate

import pipeline

_CITATION = """\
@inproceedings{lin-2004-rouge,
    title = "{ROUGE}: A Package for Automatic Evaluation of Summaries",
    author = "Lin, Chin-Yew",
    booktitle = "Text Summarization Branches Out",
    year = "2004",
    pages = "74--81",
}
"""

_DESCRIPTION = """\
ROUGE (rouge-score 0.1.2's numbers) computed by rouge-pipeline, without the Hugging Face Hub.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of predictions to score.
    references: list of references, one text or a list of texts per prediction.
    rouge_types: rouge1..rouge9, rougeL, rougeLsum (default: rouge1, rouge2, rougeL, rougeLsum),
        and rougeW-<weight>, rougeS<gap>, rougeSU<gap>.
    use_aggregator: True: the bootstrap mid F-measure per type; False: per-example F lists.
    use_stemmer: Porter stemming (rouge-score's).
    tokenizer: a callable (text -> tokens); makes use_stemmer a no-op.
    systems: a system name per prediction: each system is aggregated on its own examples.
    Any other keyword: pipeline.compute's (profile, language, multi_ref, alpha, confidence, n_boot).
Returns:
    {type: F} with the aggregator ({system: {type: F}} with systems), {type: [F, ...]} without.
"""


class RougePipeline(evaluate.Metric):
    def _info(self):
        string = datasets.Value("string", id="sequence")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features({"predictions": string, "references": datasets.Sequence(string)}),
                datasets.Features({"predictions": string, "references": string}),
            ],
        )

    def _compute(self, predictions, references, rouge_types=None, use_aggregator=True, use_stemmer=False,
                 tokenizer=None, **options):
        return pipeline.compute(predictions, references, rouge_types=rouge_types, use_aggregator=use_aggregator,
                                use_stemmer=use_stemmer, tokenizer=tokenizer, seed=int(self.seed), **options)
