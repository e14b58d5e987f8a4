-- Point lookup of one order's lines, every column: what a fully covering index (li_all_orderkey,
-- all 16 columns) is for. 4227 is an order that exists (see point_lookup.sql).
-- tuned: lineitem=tuned_lineitem_by_orderkey
SELECT *
FROM lineitem
WHERE l_orderkey = 4227
