-- Point lookup of one order's lines.
-- tuned: lineitem=tuned_lineitem_by_orderkey
SELECT l_orderkey, l_linenumber, l_quantity, l_extendedprice, l_shipdate
FROM lineitem
WHERE l_orderkey = 4242
