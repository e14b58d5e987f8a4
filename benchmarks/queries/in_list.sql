-- IN-list lookup of five orders' lines.
-- tuned: lineitem=tuned_lineitem_by_orderkey
SELECT l_orderkey, l_linenumber, l_quantity, l_extendedprice, l_shipdate
FROM lineitem
WHERE l_orderkey IN (1, 4242, 100000, 3000000, 5999975)
