-- The point lookup over the CSV copy of lineitem.
-- tuned: lineitem_csv=tuned_lineitem_by_orderkey
SELECT l_orderkey, l_linenumber, l_quantity, l_extendedprice, l_shipdate
FROM lineitem_csv
WHERE l_orderkey = 4227
