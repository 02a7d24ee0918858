"""Small offline datasets in the real formats the field's reward functions and envs read, for ecosystem_audit.py.

Each writer puts one file in ``directory`` and returns its path. The rows are
grade-school and competition-style problems written for this benchmark (no hub
download): GSM8K's layout (``question``, ``answer`` ending ``#### N``), MATH's
(``problem``, ``solution`` with a ``\\boxed{}``, ``answer``), verl's parquet
layout as jsonl (``data_source``, ``prompt`` messages, ``reward_model.ground_truth``,
``extra_info``), SkyRL's (``prompt`` messages, ``env_class``, ``reward_spec``),
TRL's conversational layout (``prompt`` messages, ``solution``) and a QA layout
(``question``, ``answer``).
"""

from __future__ import annotations

import json
import os

__all__ = ["FINQA", "GSM8K", "MATH", "QA", "write_all"]

#: (question, worked answer, final number): GSM8K's layout.
GSM8K = [
    ("A baker makes 24 rolls an hour for 6 hours and sells 97 of them. How many rolls are left?",
     "24 * 6 = <<24*6=144>>144 rolls. 144 - 97 = <<144-97=47>>47.", "47"),
    ("Mia reads 18 pages a day. How many pages does she read in 3 weeks?",
     "3 weeks is 21 days. 18 * 21 = <<18*21=378>>378.", "378"),
    ("A crate holds 35 apples. How many crates are needed for 420 apples?",
     "420 / 35 = <<420/35=12>>12.", "12"),
    ("Tom has $250. He buys 3 shirts at $42 each. How much money does he have left?",
     "3 * 42 = <<3*42=126>>126. 250 - 126 = <<250-126=124>>124.", "124"),
    ("A train travels 64 km per hour for 5 hours, then 48 km per hour for 2 hours. How far does it go?",
     "64 * 5 = <<64*5=320>>320. 48 * 2 = <<48*2=96>>96. 320 + 96 = <<320+96=416>>416.", "416"),
    ("A garden has 13 rows of 17 tulips. 29 tulips wilt. How many are left?",
     "13 * 17 = <<13*17=221>>221. 221 - 29 = <<221-29=192>>192.", "192"),
    ("Sara saves $15 a week. How many weeks until she has $645?",
     "645 / 15 = <<645/15=43>>43.", "43"),
    ("A school orders 9 boxes of 144 pencils and hands out 1000. How many pencils remain?",
     "9 * 144 = <<9*144=1296>>1296. 1296 - 1000 = <<1296-1000=296>>296.", "296"),
]

#: (problem, final answer in LaTeX): MATH's layout (the solution is built as ``... \\boxed{answer}``).
MATH = [
    ("What is $\\frac{3}{4} - \\frac{1}{6}$? Express your answer as a common fraction.", "\\frac{7}{12}"),
    ("Solve for $x$: $5x - 17 = 3x + 9$.", "13"),
    ("What is the sum of the roots of $x^2 - 11x + 28 = 0$?", "11"),
    ("Simplify $\\sqrt{72}$.", "6\\sqrt{2}"),
    ("How many positive divisors does $180$ have?", "18"),
    ("What is the remainder when $2^{20}$ is divided by $7$?", "4"),
    ("Compute $\\binom{9}{4}$.", "126"),
    ("If $f(x) = 3x^2 - 2$, what is $f(-3)$?", "25"),
]

#: (question, answer): a short-answer QA layout.
QA = [
    ("Which planet is known as the Red Planet?", "Mars"),
    ("What is the chemical symbol for gold?", "Au"),
    ("Who wrote the novel 'Pride and Prejudice'?", "Jane Austen"),
    ("What is the capital city of Canada?", "Ottawa"),
    ("How many sides does a hexagon have?", "six"),
    ("Which gas do plants absorb from the air for photosynthesis?", "carbon dioxide"),
    ("In which year did the first human land on the Moon?", "1969"),
    ("What is the largest ocean on Earth?", "Pacific Ocean"),
]

#: (question, answer): FinQA's layout (answers as the benchmark writes them: percents, amounts, ratios).
FINQA = [
    ("What was the percentage change in net revenue from 2021 to 2022?", "12.5%"),
    ("What is the ratio of current assets to current liabilities at year end 2022?", "1.84"),
    ("How much did operating income grow from 2020 to 2022, in millions?", "$1,204 million"),
    ("What share of total revenue came from services in 2022?", "37.2%"),
    ("What was the effective tax rate in 2021?", "21.3%"),
    ("What were total capital expenditures over 2020-2022, in millions?", "3,480"),
    ("By how much did diluted EPS change from 2021 to 2022?", "0.83"),
    ("What was free cash flow in 2022, in millions?", "2,915"),
]

_INSTRUCTION = "Let's think step by step and output the final answer after \"####\"."
_BOXED = "Let's think step by step and output the final answer within \\boxed{}."


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def _write(directory: str, name: str, rows: list[dict]) -> str:
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in rows)
    return path


def write_all(directory: str) -> dict[str, str]:
    """Write every dataset file into ``directory``; ``{name: path}``."""
    os.makedirs(directory, exist_ok=True)
    gsm8k = [{"question": q, "answer": f"{work}\n#### {final}"} for q, work, final in GSM8K]
    math_rows = [{"problem": p, "solution": f"So the answer is $\\boxed{{{a}}}$.", "answer": a} for p, a in MATH]
    verl_gsm8k = [{"data_source": "openai/gsm8k", "prompt": _user(f"{q} {_INSTRUCTION}"), "ability": "math",
                   "reward_model": {"style": "rule", "ground_truth": final},
                   "extra_info": {"split": "test", "index": i}} for i, (q, _, final) in enumerate(GSM8K)]
    verl_math = [{"data_source": "DigitalLearningGmbH/MATH-lighteval", "prompt": _user(f"{p} {_BOXED}"),
                  "ability": "math", "reward_model": {"style": "rule", "ground_truth": a},
                  "extra_info": {"split": "test", "index": i}} for i, (p, a) in enumerate(MATH)]
    skyrl_gsm8k = [{"prompt": _user(f"{q} {_INSTRUCTION}"), "env_class": "gsm8k",
                    "reward_spec": {"method": "rule", "ground_truth": final}, "extra_info": {"index": i}}
                   for i, (q, _, final) in enumerate(GSM8K)]
    skyrl_math = [{"prompt": _user(f"{p} {_BOXED}"), "env_class": "aime",
                   "reward_model": {"method": "rule", "ground_truth": a}, "extra_info": {"index": i}}
                  for i, (p, a) in enumerate(MATH)]  # skyrl-gym's aime reads reward_model (its gsm8k reward_spec)
    trl_math = [{"prompt": _user(p), "solution": f"${a}$"} for p, a in MATH]
    qa = [{"question": q, "answer": a} for q, a in QA]
    gem_qa = [{"problem": q, "answer": a} for q, a in QA]  # GEM's QA envs read "problem" and "answer"
    finqa = [{"data_source": "finqa", "question": q, "answer": a} for q, a in FINQA]
    return {
        "gsm8k": _write(directory, "gsm8k.jsonl", gsm8k),
        "math": _write(directory, "math.jsonl", math_rows),
        "verl_gsm8k": _write(directory, "verl_gsm8k.jsonl", verl_gsm8k),
        "verl_math": _write(directory, "verl_math.jsonl", verl_math),
        "skyrl_gsm8k": _write(directory, "skyrl_gsm8k.jsonl", skyrl_gsm8k),
        "skyrl_math": _write(directory, "skyrl_math.jsonl", skyrl_math),
        "trl_math": _write(directory, "trl_math.jsonl", trl_math),
        "qa": _write(directory, "qa.jsonl", qa),
        "finqa": _write(directory, "finqa.jsonl", finqa),
        "gem_qa": _write(directory, "gem_qa.jsonl", gem_qa),
    }
