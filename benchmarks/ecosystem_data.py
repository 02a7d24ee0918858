"""Small offline datasets in the real formats the field's reward functions and envs read, for ecosystem_audit.py.

Each writer puts one file in ``directory`` and returns its path. The rows are
grade-school and competition-style problems written for this benchmark (no hub
download): GSM8K's layout (``question``, ``answer`` ending ``#### N``), MATH's
(``problem``, ``solution`` with a ``\\boxed{}``, ``answer``), verl's parquet
layout as jsonl (``data_source``, ``prompt`` messages, ``reward_model.ground_truth``,
``extra_info``), SkyRL's (``prompt`` messages, ``env_class``, ``reward_spec``),
TRL's conversational layout (``prompt`` messages, ``solution``) and a QA layout
(``question``, ``answer``). OpenEnv's finqa_env reads a directory (:func:`write_finqa_tree`:
``benchmark_questions/finqa.csv`` and ``input_companies/``, the layout of its ``download_data.sh``); its
qed_math env reads QED-Nano-style jsonl rows (:func:`write_qed_rows`).
"""

from __future__ import annotations

import csv
import json
import os

__all__ = ["FINQA", "FINQA_TABLES", "GSM8K", "MATH", "QA", "QED_ANSWER", "QED_PROOF", "write_all", "write_finqa_tree",
           "write_qed_rows", "write_verifiers_data"]

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
        "finqa_tree": write_finqa_tree(directory),
    }


#: Two companies' 10-K tables in the layout OpenEnv's finqa_env loads: each table a ``DataFrame.to_json()`` (column ->
#: {row index -> value}; names and labels lower case with underscores, amounts as strings, as the upstream cleanup
#: writes them), and the questions on them (user_query, company, question, answer as FinQA writes answers).
FINQA_TABLES = {
    "northwind_foods": {
        "us_gaap_ScheduleOfRevenueFromContractsWithCustomersTableTextBlock": (
            "revenue_by_segment_in_millions",
            ["segment", "2021", "2022"],
            [["packaged_goods", "4,120", "4,633"], ["food_service", "1,870", "2,104"], ["total", "5,990", "6,737"]],
        ),
        "us_gaap_ScheduleOfEffectiveIncomeTaxRateReconciliationTableTextBlock": (
            "effective_tax_rate_reconciliation",
            ["item", "2021", "2022"],
            [["statutory_rate", "21.0%", "21.0%"], ["state_taxes", "2.1%", "1.9%"], ["effective_rate", "23.4%", "22.6%"]],
        ),
    },
    "acme_industrial": {
        "us_gaap_ScheduleOfCashFlowSupplementalDisclosuresTableTextBlock": (
            "cash_flow_items_in_millions",
            ["item", "2021", "2022"],
            [["operating_cash_flow", "3,310", "3,845"], ["capital_expenditures", "(1,020)", "(930)"]],
        ),
        "us_gaap_ScheduleOfEarningsPerShareBasicAndDilutedTableTextBlock": (
            "earnings_per_share",
            ["measure", "2021", "2022"],
            [["basic_eps", "4.12", "4.97"], ["diluted_eps", "4.08", "4.91"]],
        ),
    },
}

#: (id, company, question, answer, type): answers follow from the tables above.
FINQA_QUESTIONS = [
    ("nf_001", "northwind_foods", "What was the percentage change in total revenue from 2021 to 2022?", "12.47%",
     "calculation"),
    ("nf_002", "northwind_foods", "What share of total revenue came from food service in 2022?", "31.23%",
     "calculation"),
    ("nf_003", "northwind_foods", "What was the effective tax rate in 2022?", "22.6%", "lookup"),
    ("nf_004", "northwind_foods", "By how much did packaged goods revenue grow from 2021 to 2022, in millions?",
     "513", "calculation"),
    ("ai_001", "acme_industrial", "What was free cash flow in 2022, in millions?", "2,915", "calculation"),
    ("ai_002", "acme_industrial", "By how much did diluted EPS change from 2021 to 2022?", "0.83", "calculation"),
    ("ai_003", "acme_industrial", "What was operating cash flow in 2021, in millions?", "3,310", "lookup"),
    ("ai_004", "acme_industrial", "What is the ratio of 2022 capital expenditures to 2022 operating cash flow?",
     "0.2419", "calculation"),
]


def write_finqa_tree(directory: str) -> str:
    """OpenEnv finqa_env's data directory (``data_path``): the question CSV, one JSON per table, the table index."""
    root = os.path.join(directory, "finqa_data")
    companies = os.path.join(root, "input_companies")
    os.makedirs(os.path.join(root, "benchmark_questions"), exist_ok=True)
    index = {}
    for company, tables in FINQA_TABLES.items():
        os.makedirs(os.path.join(companies, company), exist_ok=True)
        for name, (description, columns, rows) in tables.items():
            frame = {col: {str(i): row[j] for i, row in enumerate(rows)} for j, col in enumerate(columns)}
            text = json.dumps(frame)
            with open(os.path.join(companies, company, f"{name}.json"), "w", encoding="utf-8") as fh:
                fh.write(text)
            index[f"{company}/{name}"] = {"table": text, "description": description, "column_names": columns,
                                          "company": company}
    with open(os.path.join(companies, "tables_cleaned_all_companies.json"), "w", encoding="utf-8") as fh:
        json.dump(index, fh)
    with open(os.path.join(root, "benchmark_questions", "finqa.csv"), "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "user_query", "company", "question", "answer", "question_type", "explanation"])
        for qid, company, question, answer, kind in FINQA_QUESTIONS:
            writer.writerow([qid, f"{question} Use the company's 10-K tables.", company, question, answer, kind, ""])
    return root


#: (problem, answer): QED-Nano answer-mode rows (``evaluation_mode: answer``; the env boxes the gold itself).
QED_ANSWER = [
    ("Find the number of ordered pairs of positive integers $(a, b)$ with $a + b = 20$.", "19"),
    ("Compute the remainder when $3^{100}$ is divided by $7$.", "4"),
    ("Find the sum of all real roots of $x^3 - 6x^2 + 11x - 6 = 0$.", "6"),
    ("What is $\\frac{3}{4} - \\frac{1}{6}$ as a common fraction?", "\\frac{7}{12}"),
    ("Find the least positive integer $n$ such that $n!$ is divisible by $1000$.", "15"),
    ("How many positive divisors does $360$ have?", "24"),
]

#: (problem, reference proof, marking scheme): QED-Nano proof rows (``rubrics`` as its datasets give them).
QED_PROOF = [
    ("Prove that the sum of two odd integers is even.",
     "Write the integers as 2m+1 and 2n+1. Their sum is 2m+2n+2 = 2(m+n+1), a multiple of 2, hence even.",
     [{"title": "Parametrisation", "points": 3, "desc": "Writes both odd integers as 2k+1."},
      {"title": "Conclusion", "points": 4, "desc": "Factors out 2 from the sum."}]),
    ("Prove that the square of every integer leaves remainder 0 or 1 when divided by 4.",
     "If n = 2k then n^2 = 4k^2, remainder 0. If n = 2k+1 then n^2 = 4k^2+4k+1 = 4(k^2+k)+1, remainder 1.",
     [{"title": "Cases", "points": 3, "desc": "Splits into even and odd n."},
      {"title": "Computation", "points": 4, "desc": "Computes both squares modulo 4."}]),
    ("Prove that for every positive integer n, n^3 - n is divisible by 6.",
     "n^3 - n = (n-1)n(n+1) is a product of three consecutive integers; one of them is even and one is a "
     "multiple of 3, so the product is divisible by 6.",
     [{"title": "Factorisation", "points": 3, "desc": "Factors n^3 - n as (n-1)n(n+1)."},
      {"title": "Divisibility", "points": 4, "desc": "Argues divisibility by 2 and by 3."}]),
    ("Prove that there are infinitely many primes.",
     "Suppose p_1, ..., p_k were all the primes. The number N = p_1 p_2 ... p_k + 1 leaves remainder 1 on "
     "division by each p_i, so a prime factor of N is not in the list, a contradiction.",
     [{"title": "Construction", "points": 3, "desc": "Builds the product of all primes plus one."},
      {"title": "Contradiction", "points": 4, "desc": "Shows a prime factor is missing from the list."}]),
]


def write_qed_rows(directory: str) -> dict[str, str]:
    """OpenEnv qed_math env's dataset files (its ``dataset_path``): ``{"answer", "proof", "multi_step"}`` -> path."""
    answer = [{"problem": p, "answer": a, "problem_type": "answer", "dataset": "eco-answer", "id": f"qa_{i:03d}"}
              for i, (p, a) in enumerate(QED_ANSWER)]
    proof = [{"problem": p, "solution": s, "rubrics": r, "dataset": "eco-proof", "problem_id": f"qp_{i:03d}"}
             for i, (p, s, r) in enumerate(QED_PROOF)]
    multi = [{**row, "problem_type": "multi_step", "dataset": "eco-multi-step"} for row in proof]  # 3 attempts
    return {"answer": _write(directory, "qed_answer.jsonl", answer), "proof": _write(directory, "qed_proof.jsonl", proof),
            "multi_step": _write(directory, "qed_multi_step.jsonl", multi)}


#: Texts for verifiers' reverse_text (its dataset's one column, ``prompt``; the gold is the text reversed).
REVERSE_TEXT = [
    "The quick brown fox jumps over the lazy dog.",
    "Reinforcement learning needs honest rewards.",
    "Seven silver spoons sat on the shelf.",
    "A journey of a thousand miles begins with one step.",
    "Graders should not pay for sprays.",
    "Pack my box with five dozen liquor jugs.",
    "Never trust a reward you have not audited.",
    "Twelve thin tigers tiptoed through the tall grass.",
]


def write_verifiers_data(directory: str) -> dict[str, str]:
    """Local datasets for verifiers' bundled tasksets, in the hub layouts their ``load_dataset`` calls read.

    ``reverse_text``: a directory with ``train.jsonl`` (its config's ``dataset_name`` takes a path).
    ``gsm8k_cwd``: a directory holding ``openai/gsm8k`` as the hub repository lays it out (a README whose
    ``configs`` name ``main`` and its ``test`` split): its taskset calls ``load_dataset("openai/gsm8k", "main")``
    with no option for another name, and ``datasets`` reads a local directory of that name first, so the audit
    runs from ``gsm8k_cwd``.
    """
    reverse = os.path.join(directory, "reverse_text")
    os.makedirs(reverse, exist_ok=True)
    _write(reverse, "train.jsonl", [{"prompt": text} for text in REVERSE_TEXT])
    cwd = os.path.join(directory, "vf_cwd")
    repo = os.path.join(cwd, "openai", "gsm8k")
    os.makedirs(os.path.join(repo, "main"), exist_ok=True)
    with open(os.path.join(repo, "README.md"), "w", encoding="utf-8") as fh:
        fh.write("---\nconfigs:\n- config_name: main\n  data_files:\n  - split: test\n    path: main/test.jsonl\n---\n")
    _write(os.path.join(repo, "main"), "test.jsonl",
           [{"question": q, "answer": f"{work}\n#### {final}"} for q, work, final in GSM8K])
    return {"reverse_text": reverse, "gsm8k_cwd": cwd}
