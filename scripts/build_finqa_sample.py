"""Writes the FinQA-v0 embedded set: fictional companies in the FinQA-benchmark layout.

Answers are computed from the table numbers here, so the CSV and the tables agree.
Usage: python scripts/build_finqa_sample.py OUT_DIR, then compare OUT_DIR with
gym_integrity/data/finqa (benchmark_questions/ and input_companies/; the small
original-FinQA sample in original_sample/ is written by hand). OUT_DIR is
replaced: never point it at the package's data folder itself.
"""
import csv, json, os, shutil, sys

OUT = sys.argv[1]
YEARS = ["2024", "2023", "2022"]


def money(v, first=False, dollar=True):
    if v == 0:
        return "—"
    s = f"{abs(v):,}" if isinstance(v, int) else f"{abs(v):,.2f}"
    if v < 0:
        s = f"({s})"
    return ("$" + s) if (first and dollar) else s


def pct(v):
    return f"{v:.1f}%"


class Table:
    def __init__(self, company, name, description, label_cols, value_cols, rows):
        # rows: list of (labels tuple, values list) ; values already formatted (str or int)
        self.company, self.name, self.description = company, name, description
        self.label_cols, self.value_cols, self.rows = label_cols, value_cols, rows

    def columns_json(self):
        cols = {}
        for ci, c in enumerate(self.label_cols):
            cols[c] = {str(i): r[0][ci] for i, r in enumerate(self.rows)}
        for ci, c in enumerate(self.value_cols):
            cols[c] = {str(i): r[1][ci] for i, r in enumerate(self.rows)}
        return cols


def fmt_rows(items, data, cols, first_dollar_rows=(0,), kind="money"):
    rows = []
    for i, item in enumerate(items):
        vals = []
        for c in cols:
            v = data[item][c]
            if kind == "money":
                vals.append(money(v, first=i in first_dollar_rows or item.startswith("total") or item.startswith("net_income")))
            elif kind == "int":
                vals.append(v)
            else:
                vals.append(v)
        rows.append(((item,), vals))
    return rows


tables = []
questions = []
qid = [0]


def q(company, question, answer, qtype, explanation, user_query=None):
    qid[0] += 1
    questions.append({
        "id": f"fq{qid[0]:03d}", "user_query": user_query or question, "company": company,
        "question": question, "answer": answer, "question_type": qtype, "explanation": explanation,
    })


def r1(x):
    return f"{x:.1f}"


def r2(x):
    return f"{x:.2f}"


# ---------------------------------------------------------------- northwind_foods
c = "northwind_foods"
inc = {
    "net_revenue": {"2024": 12480, "2023": 11935, "2022": 11210},
    "cost_of_sales": {"2024": 7712, "2023": 7518, "2022": 7179},
    "gross_profit": {}, "selling_general_and_administrative": {"2024": 2655, "2023": 2530, "2022": 2398},
    "operating_income": {}, "interest_expense": {"2024": 212, "2023": 236, "2022": 241},
    "income_before_income_taxes": {}, "provision_for_income_taxes": {"2024": 438, "2023": 401, "2022": 354},
    "net_income": {},
}
for y in YEARS:
    inc["gross_profit"][y] = inc["net_revenue"][y] - inc["cost_of_sales"][y]
    inc["operating_income"][y] = inc["gross_profit"][y] - inc["selling_general_and_administrative"][y]
    inc["income_before_income_taxes"][y] = inc["operating_income"][y] - inc["interest_expense"][y]
    inc["net_income"][y] = inc["income_before_income_taxes"][y] - inc["provision_for_income_taxes"][y]
items = list(inc)
tables.append(Table(c, "nwf_ConsolidatedStatementsOfIncomeTableTextBlock",
                    "consolidated_statements_of_income_for_fiscal_2024,_2023_and_2022_(in_millions)",
                    ["line_item"], YEARS, fmt_rows(items, inc, YEARS, first_dollar_rows=(0, 2))))
seg = {
    "packaged_foods": {"2024": 5120, "2023": 5010, "2022": 4870},
    "beverages": {"2024": 3240, "2023": 2905, "2022": 2680},
    "foodservice": {"2024": 2715, "2023": 2690, "2022": 2455},
    "international": {"2024": 1405, "2023": 1330, "2022": 1205},
}
seg["total_net_revenue"] = {y: sum(seg[s][y] for s in list(seg)) for y in YEARS}
assert all(seg["total_net_revenue"][y] == inc["net_revenue"][y] for y in YEARS), seg["total_net_revenue"]
tables.append(Table(c, "nwf_DisaggregationOfRevenueBySegmentTableTextBlock",
                    "net_revenue_by_reportable_segment_for_2024,_2023_and_2022_(in_millions)",
                    ["segment"], YEARS, fmt_rows(list(seg), seg, YEARS)))
debt_years = ["2025", "2026", "2027", "2028", "2029", "thereafter"]
debt = {"2025": 350, "2026": 500, "2027": 0, "2028": 750, "2029": 400, "thereafter": 2100}
debt_total = sum(debt.values())
rows = [((y,), [money(debt[y], first=(y == "2025"))]) for y in debt_years]
rows.append((("total_long-term_debt_maturities",), [money(debt_total, first=True)]))
tables.append(Table(c, "us_gaap_ScheduleOfMaturitiesOfLongTermDebtTableTextBlock",
                    "scheduled_principal_maturities_of_long-term_debt_as_of_december_31,_2024_(in_millions)",
                    ["year"], ["principal_amount"], rows))
taxr = {
    "computed_expected_tax_at_21%": {y: round(inc["income_before_income_taxes"][y] * 0.21) for y in YEARS},
    "state_taxes,_net_of_federal_effect": {"2024": 61, "2023": 57, "2022": 49},
    "foreign_rate_differential": {"2024": -18, "2023": -25, "2022": -31},
    "research_and_development_credit": {"2024": -9, "2023": -8, "2022": -7},
    "other,_net": {},
}
for y in YEARS:
    partial = sum(taxr[k][y] for k in list(taxr)[:4])
    taxr["other,_net"][y] = inc["provision_for_income_taxes"][y] - partial
rows = []
for i, k in enumerate(taxr):
    rows.append(((k,), [money(taxr[k][y], first=(i == 0)) for y in YEARS]))
rows.append((("provision_for_income_taxes",), [money(inc["provision_for_income_taxes"][y], first=True) for y in YEARS]))
etr = {y: 100 * inc["provision_for_income_taxes"][y] / inc["income_before_income_taxes"][y] for y in YEARS}
rows.append((("effective_tax_rate",), [pct(etr[y]) for y in YEARS]))
tables.append(Table(c, "us_gaap_ScheduleOfEffectiveIncomeTaxRateReconciliationTableTextBlock",
                    "reconciliation_of_the_statutory_federal_income_tax_to_the_provision_for_income_taxes_(dollars_in_millions)",
                    ["component"], YEARS, rows))

q(c, "What was Northwind Foods' net revenue in fiscal 2024, in millions of dollars?",
  "\\boxed{12,480}", "lookup", "net_revenue 2024 = 12,480")
gm = 100 * inc["gross_profit"]["2024"] / inc["net_revenue"]["2024"]
q(c, "What was Northwind Foods' gross margin in 2024, as a percentage of net revenue?",
  f"\\boxed{{{r1(gm)}\\%}}", "percentage",
  f"gross_profit / net_revenue = {inc['gross_profit']['2024']:,} / {inc['net_revenue']['2024']:,} = {gm:.2f}%")
g = 100 * (seg["beverages"]["2024"] / seg["beverages"]["2023"] - 1)
q(c, "By what percentage did the beverages segment's net revenue grow from 2023 to 2024?",
  f"{r1(g)}%", "percentage", f"3,240 / 2,905 - 1 = {g:.3f}%")
ch = inc["interest_expense"]["2024"] - inc["interest_expense"]["2023"]
q(c, "What was the change in Northwind Foods' interest expense from 2023 to 2024, in millions? Give a negative number for a decrease.",
  f"\\boxed{{{ch}}}", "negative", f"212 - 236 = {ch}")
q(c, "What were the net revenues of the packaged foods and beverages segments in 2024, in millions (in that order)?",
  "\\boxed{5,120}, \\boxed{3,240}", "multi_value", "packaged_foods 2024 = 5,120; beverages 2024 = 3,240")
q(c, "What was Northwind Foods' effective tax rate in each of 2022, 2023 and 2024?",
  ", ".join(f"{y}: {r1(etr[y])}%" for y in sorted(YEARS)), "year_keyed",
  "; ".join(f"{y}: {inc['provision_for_income_taxes'][y]} / {inc['income_before_income_taxes'][y]}" for y in sorted(YEARS)))
share = 100 * (debt["2025"] + debt["2026"]) / debt_total
q(c, "What share of Northwind Foods' total scheduled long-term debt maturities falls due in 2025 and 2026 combined?",
  f"{r1(share)}%", "percentage", f"(350 + 500) / {debt_total:,} = {share:.3f}%")
q(c, "What was the foreign rate differential in Northwind Foods' 2023 tax rate reconciliation, in millions?",
  "-25", "negative", "foreign_rate_differential 2023 = (25)")
best = max(["packaged_foods", "beverages", "foodservice", "international"],
           key=lambda s: seg[s]["2024"] / seg[s]["2023"])
q(c, "Which Northwind Foods segment had the highest net revenue growth rate from 2023 to 2024?",
  best, "text", "growth: " + ", ".join(f"{s} {seg[s]['2024']/seg[s]['2023']-1:.3%}" for s in seg if s != "total_net_revenue"))
om = {y: inc["operating_income"][y] / inc["net_revenue"][y] for y in YEARS}
q(c, "What was Northwind Foods' operating margin in 2022 and in 2024, as decimals (2022 first)?",
  f"{om['2022']:.4f}; {om['2024']:.4f}", "multi_value",
  f"operating_income / net_revenue: 2022 {inc['operating_income']['2022']}/{inc['net_revenue']['2022']}, 2024 {inc['operating_income']['2024']}/{inc['net_revenue']['2024']}")

# ---------------------------------------------------------------- helios_energy
c = "helios_energy"
gen = {
    "solar": {"2024": 18420, "2023": 14960, "2022": 11230},
    "wind": {"2024": 22105, "2023": 21870, "2022": 20415},
    "natural_gas": {"2024": 9840, "2023": 12310, "2022": 14785},
    "hydro": {"2024": 4210, "2023": 4385, "2022": 4120},
}
gen["total_generation"] = {y: sum(gen[s][y] for s in list(gen)) for y in YEARS}
tables.append(Table(c, "hel_ElectricityGenerationByFuelSourceTableTextBlock",
                    "net_electricity_generation_by_fuel_source_(in_gigawatt-hours)",
                    ["fuel_source"], YEARS, [((k,), [gen[k][y] for y in YEARS]) for k in gen]))
hinc = {
    "operating_revenues": {"2024": 6842, "2023": 6517, "2022": 6930},
    "fuel_and_purchased_power": {"2024": 1904, "2023": 2206, "2022": 2871},
    "operations_and_maintenance": {"2024": 1512, "2023": 1466, "2022": 1390},
    "depreciation_and_amortization": {"2024": 1288, "2023": 1196, "2022": 1107},
    "operating_income": {},
    "interest_expense,_net": {"2024": 655, "2023": 610, "2022": 572},
    "income_before_income_taxes": {},
    "income_tax_expense": {"2024": 279, "2023": 214, "2022": 240},
    "net_income": {},
}
for y in YEARS:
    hinc["operating_income"][y] = hinc["operating_revenues"][y] - hinc["fuel_and_purchased_power"][y] - hinc["operations_and_maintenance"][y] - hinc["depreciation_and_amortization"][y]
    hinc["income_before_income_taxes"][y] = hinc["operating_income"][y] - hinc["interest_expense,_net"][y]
    hinc["net_income"][y] = hinc["income_before_income_taxes"][y] - hinc["income_tax_expense"][y]
tables.append(Table(c, "hel_ConsolidatedStatementsOfOperationsTableTextBlock",
                    "consolidated_statements_of_operations_(in_millions)", ["line_item"], YEARS,
                    fmt_rows(list(hinc), hinc, YEARS)))
capex = {
    "renewable_generation": {"2024": 3120, "2023": 2645, "2022": 2210},
    "transmission_and_distribution": {"2024": 1480, "2023": 1395, "2022": 1302},
    "battery_storage": {"2024": 640, "2023": 315, "2022": 120},
    "other": {"2024": 210, "2023": 198, "2022": 224},
}
capex["total_capital_expenditures"] = {y: sum(capex[k][y] for k in list(capex)) for y in YEARS}
tables.append(Table(c, "hel_CapitalExpendituresByCategoryTableTextBlock",
                    "capital_expenditures_by_category_(in_millions)", ["category"], YEARS,
                    fmt_rows(list(capex), capex, YEARS)))
taxc = [
    (("federal", "current"), {"2024": 88, "2023": 61, "2022": 102}),
    (("federal", "deferred"), {"2024": 141, "2023": 119, "2022": 97}),
    (("state", "current"), {"2024": 21, "2023": 30, "2022": 18}),
    (("state", "deferred"), {"2024": 29, "2023": -12, "2022": 23}),
    (("production_tax_credits", ""), {"2024": 0, "2023": 16, "2022": 0}),
]
assert all(sum(v[y] for _, v in taxc) == hinc["income_tax_expense"][y] for y in YEARS)
rows = [(lab, [money(v[y], first=(i == 0)) for y in YEARS]) for i, (lab, v) in enumerate(taxc)]
rows.append((("total_income_tax_expense", ""), [money(hinc["income_tax_expense"][y], first=True) for y in YEARS]))
tables.append(Table(c, "us_gaap_ScheduleOfComponentsOfIncomeTaxExpenseBenefitTableTextBlock",
                    "components_of_income_tax_expense_(in_millions)", ["jurisdiction", "component"], YEARS, rows))

q(c, "How many gigawatt-hours of solar generation did Helios Energy produce in 2024?",
  "18,420", "lookup", "solar 2024 = 18420")
sh = 100 * (gen["solar"]["2024"] + gen["wind"]["2024"]) / gen["total_generation"]["2024"]
q(c, "What percentage of Helios Energy's 2024 total generation came from solar and wind combined?",
  f"\\boxed{{{r1(sh)}\\%}}", "percentage", f"(18420 + 22105) / {gen['total_generation']['2024']} = {sh:.3f}%")
d = gen["natural_gas"]["2024"] - gen["natural_gas"]["2022"]
q(c, "By how many gigawatt-hours did Helios Energy's natural gas generation change from 2022 to 2024?",
  f"{d:,}", "negative", f"9840 - 14785 = {d}")
cagr = 100 * ((gen["solar"]["2024"] / gen["solar"]["2022"]) ** 0.5 - 1)
q(c, "What was the compound annual growth rate of Helios Energy's solar generation from 2022 to 2024?",
  f"{r1(cagr)}%", "percentage", f"(18420/11230)^(1/2) - 1 = {cagr:.3f}%")
q(c, "What was Helios Energy's state deferred income tax expense (benefit) in 2023, in millions?",
  "\\boxed{-12}", "negative", "state deferred 2023 = (12)")
q(c, "What were Helios Energy's operating income and net income in 2024, in millions (operating income first)?",
  f"{hinc['operating_income']['2024']:,}; {hinc['net_income']['2024']:,}", "multi_value",
  f"operating_income 2024 = {hinc['operating_income']['2024']}, net_income 2024 = {hinc['net_income']['2024']}")
bs = {y: capex["battery_storage"][y] for y in YEARS}
q(c, "How much did Helios Energy spend on battery storage capital expenditures in each year from 2022 to 2024, in millions?",
  "\\boxed{2022: 120, 2023: 315, 2024: 640}", "year_keyed", "battery_storage row")
rc = 100 * capex["renewable_generation"]["2024"] / capex["total_capital_expenditures"]["2024"]
q(c, "What share of Helios Energy's 2024 capital expenditures went to renewable generation?",
  f"{r1(rc)}%", "percentage", f"3120 / {capex['total_capital_expenditures']['2024']} = {rc:.3f}%")
nm = {y: 100 * hinc["net_income"][y] / hinc["operating_revenues"][y] for y in YEARS}
q(c, "What was Helios Energy's net profit margin in 2023 and 2024?",
  f"2023: {r1(nm['2023'])}%, 2024: {r1(nm['2024'])}%", "year_keyed",
  f"net_income / operating_revenues per year: {nm}")

# ---------------------------------------------------------------- quantarix_semiconductors
c = "quantarix_semiconductors"
qinc = {
    "revenue": {"2024": 4315, "2023": 3690, "2022": 4108},
    "cost_of_revenue": {"2024": 2290, "2023": 2312, "2022": 2205},
    "research_and_development": {"2024": 1185, "2023": 1240, "2022": 1096},
    "selling,_general_and_administrative": {"2024": 512, "2023": 548, "2022": 497},
    "restructuring_charges": {"2024": 0, "2023": 164, "2022": 0},
    "operating_income_(loss)": {},
    "other_income_(expense),_net": {"2024": 37, "2023": -58, "2022": 12},
    "income_tax_expense_(benefit)": {"2024": 71, "2023": -95, "2022": 52},
    "net_income_(loss)": {},
}
for y in YEARS:
    qinc["operating_income_(loss)"][y] = qinc["revenue"][y] - sum(qinc[k][y] for k in ["cost_of_revenue", "research_and_development", "selling,_general_and_administrative", "restructuring_charges"])
    qinc["net_income_(loss)"][y] = qinc["operating_income_(loss)"][y] + qinc["other_income_(expense),_net"][y] - qinc["income_tax_expense_(benefit)"][y]
assert qinc["net_income_(loss)"]["2023"] < 0, qinc["net_income_(loss)"]
tables.append(Table(c, "qtx_ConsolidatedStatementsOfOperationsTableTextBlock",
                    "consolidated_statements_of_operations_(in_millions)", ["line_item"], YEARS,
                    fmt_rows(list(qinc), qinc, YEARS, first_dollar_rows=(0, 5, 8))))
geo = {
    "united_states": {"2024": 1120, "2023": 1045, "2022": 1180},
    "taiwan": {"2024": 1310, "2023": 1002, "2022": 1126},
    "china": {"2024": 905, "2023": 880, "2022": 1034},
    "europe": {"2024": 602, "2023": 511, "2022": 498},
    "rest_of_world": {"2024": 378, "2023": 252, "2022": 270},
}
geo["total_revenue"] = {y: sum(geo[k][y] for k in list(geo)) for y in YEARS}
assert all(geo["total_revenue"][y] == qinc["revenue"][y] for y in YEARS), geo["total_revenue"]
tables.append(Table(c, "us_gaap_RevenueFromExternalCustomersByGeographicAreasTableTextBlock",
                    "revenue_by_geographic_area_based_on_customer_ship-to_location_(in_millions)", ["region"], YEARS,
                    fmt_rows(list(geo), geo, YEARS)))
rsu = [("balance_as_of_december_31_2023", 18240, "$48.12"), ("rsus_granted", 6115, "$55.30"),
       ("rsus_vested", -5870, "$46.75"), ("rsus_forfeited", -1032, "$50.04"),
       ("balance_as_of_december_31_2024", 18240 + 6115 - 5870 - 1032, "$50.88")]
tables.append(Table(c, "us_gaap_ScheduleOfNonvestedRestrictedStockUnitsActivityTableTextBlock",
                    "summary_of_restricted_stock_unit_activity_for_2024", ["activity"],
                    ["number_of_rsus_in_thousands", "weighted_average_grant_date_fair_value_per_rsu"],
                    [((a,), [n, f]) for a, n, f in rsu]))
inv = {"raw_materials": {"2024": 412, "2023": 388}, "work_in_process": {"2024": 905, "2023": 1012},
       "finished_goods": {"2024": 331, "2023": 420}}
inv["total_inventories"] = {y: sum(inv[k][y] for k in list(inv)) for y in ["2024", "2023"]}
tables.append(Table(c, "qtx_ScheduleOfInventoryCurrentTableTextBlock", "inventories_as_of_december_31_(in_millions)",
                    ["inventory_component"], ["2024", "2023"], fmt_rows(list(inv), inv, ["2024", "2023"])))

q(c, "What was Quantarix Semiconductors' net income (loss) in 2023, in millions of dollars?",
  f"\\boxed{{{qinc['net_income_(loss)']['2023']}}}", "negative", f"net_income_(loss) 2023 = {qinc['net_income_(loss)']['2023']}")
rg = 100 * (qinc["revenue"]["2024"] / qinc["revenue"]["2023"] - 1)
q(c, "What was Quantarix Semiconductors' revenue growth from 2023 to 2024, in percent?",
  f"{r2(rg)}%", "percentage", f"4315 / 3690 - 1 = {rg:.4f}%")
rd = {y: 100 * qinc["research_and_development"][y] / qinc["revenue"][y] for y in YEARS}
q(c, "What was Quantarix's research and development expense as a percentage of revenue in each of 2022, 2023 and 2024?",
  "; ".join(f"{y}: {r1(rd[y])}%" for y in sorted(YEARS)), "year_keyed", f"{rd}")
tw = 100 * geo["taiwan"]["2024"] / geo["total_revenue"]["2024"]
q(c, "What share of Quantarix's 2024 revenue came from customers in Taiwan?",
  f"{r1(tw)}%", "percentage", f"1310 / 4315 = {tw:.3f}%")
q(c, "How many restricted stock units (in thousands) did Quantarix grant and forfeit in 2024 (granted first)?",
  "6,115, 1,032", "multi_value", "rsus_granted 6115; rsus_forfeited 1032")
net_change = rsu[-1][1] - rsu[0][1]
q(c, "What was the net change in Quantarix's unvested restricted stock units during 2024, in thousands?",
  f"({abs(net_change):,})" if net_change < 0 else f"{net_change:,}", "negative", f"{rsu[-1][1]} - {rsu[0][1]} = {net_change}")
wip = inv["work_in_process"]["2024"] - inv["work_in_process"]["2023"]
q(c, "By how much did Quantarix's work-in-process inventory change from 2023 to 2024, in millions?",
  f"{wip}", "negative", f"905 - 1012 = {wip}")
it = inv["total_inventories"]["2024"]
q(c, "What were Quantarix's total inventories at the end of 2024, in millions of dollars?",
  f"${it:,} million", "lookup", f"total_inventories 2024 = {it}")
q(c, "In which year did Quantarix Semiconductors record restructuring charges?",
  "2023", "lookup", "restructuring_charges nonzero only in 2023")

# ---------------------------------------------------------------- bluepeak_logistics
c = "bluepeak_logistics"
ops = {
    "shipments_(thousands)": {"2024": 48215, "2023": 45930, "2022": 47102},
    "revenue_per_shipment": {"2024": "$182.40", "2023": "$176.95", "2022": "$171.30"},
    "on-time_delivery_rate": {"2024": "96.2%", "2023": "94.8%", "2022": "95.1%"},
    "tractor_fleet_size": {"2024": 11820, "2023": 11475, "2022": 11610},
}
tables.append(Table(c, "bpl_KeyOperatingStatisticsTableTextBlock", "key_operating_statistics", ["metric"], YEARS,
                    [((k,), [v[y] for y in YEARS]) for k, v in ops.items()]))
cf = {
    "net_cash_provided_by_operating_activities": {"2024": 1342, "2023": 1188, "2022": 1251},
    "net_cash_used_in_investing_activities": {"2024": -986, "2023": -1204, "2022": -745},
    "net_cash_used_in_financing_activities": {"2024": -301, "2023": -116, "2022": -462},
}
cf["net_increase_(decrease)_in_cash"] = {y: sum(cf[k][y] for k in list(cf)) for y in YEARS}
tables.append(Table(c, "bpl_ConsolidatedCashFlowSummaryTableTextBlock", "summary_of_cash_flows_(in_millions)",
                    ["cash_flow_category"], YEARS, fmt_rows(list(cf), cf, YEARS, first_dollar_rows=(0, 3))))
lease = [("2025", 412, 38), ("2026", 376, 35), ("2027", 331, 29), ("2028", 284, 22), ("2029", 240, 14), ("thereafter", 905, 41)]
tot_op = sum(x[1] for x in lease); tot_fin = sum(x[2] for x in lease)
imp_op, imp_fin = 298, 17
rows = [((y,), [money(o, first=(y == "2025")), money(f, first=(y == "2025")), money(o + f, first=(y == "2025"))]) for y, o, f in lease]
rows.append((("total_undiscounted_lease_payments",), [money(tot_op), money(tot_fin), money(tot_op + tot_fin)]))
rows.append((("less:_imputed_interest",), [money(-imp_op), money(-imp_fin), money(-imp_op - imp_fin)]))
rows.append((("total_lease_liabilities",), [money(tot_op - imp_op, True), money(tot_fin - imp_fin, True), money(tot_op + tot_fin - imp_op - imp_fin, True)]))
tables.append(Table(c, "us_gaap_LesseeOperatingLeaseLiabilityMaturityTableTextBlock",
                    "maturities_of_lease_liabilities_as_of_december_31,_2024_(in_millions)", ["year"],
                    ["operating_leases", "finance_leases", "total"], rows))
binc = {"operating_revenues": {"2024": 8794, "2023": 8127, "2022": 8068},
        "operating_ratio": {"2024": "91.4%", "2023": "93.0%", "2022": "92.2%"},
        "net_income": {"2024": 512, "2023": 397, "2022": 438}}
tables.append(Table(c, "bpl_SelectedFinancialDataTableTextBlock", "selected_financial_data_(dollars_in_millions)",
                    ["measure"], YEARS, [((k,), [money(v[y], first=True) if isinstance(v[y], int) else v[y] for y in YEARS]) for k, v in binc.items()]))

q(c, "What was BluePeak Logistics' net cash used in investing activities in 2023, in millions?",
  "\\boxed{-1,204}", "negative", "net_cash_used_in_investing_activities 2023 = (1,204)")
q(c, "What was BluePeak's on-time delivery rate in 2024?",
  "96.2%", "lookup", "on-time_delivery_rate 2024 = 96.2%")
shg = 100 * (ops["shipments_(thousands)"]["2024"] / ops["shipments_(thousands)"]["2023"] - 1)
q(c, "By what percentage did BluePeak's shipments grow from 2023 to 2024?",
  f"{r2(shg)}%", "percentage", f"48215 / 45930 - 1 = {shg:.4f}%")
q(c, "What was BluePeak's net increase (decrease) in cash for each year from 2022 to 2024, in millions?",
  ", ".join(f"{y}: {cf['net_increase_(decrease)_in_cash'][y]}" for y in sorted(YEARS)), "year_keyed",
  f"{cf['net_increase_(decrease)_in_cash']}")
imp_share = 100 * imp_op / tot_op
q(c, "What percentage of BluePeak's total undiscounted operating lease payments is imputed interest?",
  f"{r2(imp_share)}%", "percentage", f"298 / {tot_op} = {imp_share:.4f}%")
q(c, "What are BluePeak's total lease liabilities for operating leases and for finance leases, in millions (operating first)?",
  f"\\boxed{{{tot_op - imp_op:,}}}; \\boxed{{{tot_fin - imp_fin}}}", "multi_value",
  f"operating {tot_op}-{imp_op}, finance {tot_fin}-{imp_fin}")
rev_ship = 182.40 * 48215 / 1000
q(c, "Using revenue per shipment and shipments (in thousands), estimate BluePeak's 2024 shipment revenue in millions of dollars.",
  f"{rev_ship:,.1f}", "calculation", f"182.40 * 48,215 thousand = {rev_ship:.2f} million")
orc = 91.4 - 93.0
q(c, "By how many percentage points did BluePeak's operating ratio change from 2023 to 2024?",
  f"{orc:.1f}", "negative", "91.4 - 93.0 = -1.6 percentage points")
q(c, "What fraction of BluePeak's 2022 operating cash flow was spent on investing activities? Answer as a fraction in lowest terms or a decimal.",
  "745/1251", "calculation", "745 / 1251 = 0.5955")

import collections
types = collections.Counter(x["question_type"] for x in questions)
print(len(questions), "questions", dict(types), len(tables), "tables")

if os.path.exists(OUT):
    shutil.rmtree(OUT)
os.makedirs(os.path.join(OUT, "benchmark_questions"))
with open(os.path.join(OUT, "benchmark_questions", "finqa.csv"), "w", newline="", encoding="utf-8") as fh:
    w = csv.DictWriter(fh, fieldnames=["id", "user_query", "company", "question", "answer", "question_type", "explanation"])
    w.writeheader()
    for row in questions:
        w.writerow(row)
cleaned = {}
for t in tables:
    d = os.path.join(OUT, "input_companies", t.company)
    os.makedirs(d, exist_ok=True)
    cols = t.columns_json()
    with open(os.path.join(d, t.name + ".json"), "w", encoding="utf-8") as fh:
        json.dump(cols, fh, ensure_ascii=False, separators=(",", ":"))
    uniq = {}
    for col, vals in cols.items():
        seen = []
        for v in vals.values():
            if v not in seen:
                seen.append(v)
        uniq[col] = seen
    cleaned[f"{t.company}/{t.name}"] = {
        "table": json.dumps(cols, ensure_ascii=False, separators=(",", ":")),
        "description": t.description,
        "column_names": list(cols),
        "unique_vals_per_col": uniq,
        "company": t.company,
    }
with open(os.path.join(OUT, "input_companies", "tables_cleaned_all_companies.json"), "w", encoding="utf-8") as fh:
    json.dump(cleaned, fh, ensure_ascii=False, indent=1)
