"""A solved plan as tidy tables (plan) and what the user gets from it: the finance
workbook (workbook; its Summary sheet in summary, its Risk sheet in risk), the what-if
comparison workbook (whatif_workbook), the JSON (json_out, json_text), the FOCUS charges
(focus), the offers listing (offers), and the commitment economics the JSON and the
workbook both show (economics). How any of their sheets is written — number formats,
text kept as text, a table sheet, print setup, atomic saving — is cells; a large table's
rows go straight into the sheet's XML (sheet_rows)."""
