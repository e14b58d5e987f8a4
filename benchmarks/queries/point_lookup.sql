-- Point lookup of one order's lines.
-- 4227 is an order that exists: TPC-H order keys are sparse (8 of every 32), and 4242, used
-- before 2026-11-26, has no lines, so those results measured a lookup that found nothing.
-- tuned: lineitem=tuned_lineitem_by_orderkey
SELECT l_orderkey, l_linenumber, l_quantity, l_extendedprice, l_shipdate
FROM lineitem
WHERE l_orderkey = 4227
