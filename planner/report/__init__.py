"""A solved plan as tidy tables (plan) and what the user gets from it: the finance
workbook (workbook), the what-if comparison workbook (whatif_workbook), the JSON
(json_out)."""
