-- lineitem ⋈ orders on the order key (a sort-merge join without indexes).
-- tuned: lineitem=tuned_lineitem_by_orderkey, orders=tuned_orders_by_orderkey
SELECT o_orderpriority, count(*) AS lines, sum(l_extendedprice) AS revenue
FROM lineitem JOIN orders ON l_orderkey = o_orderkey
GROUP BY o_orderpriority
ORDER BY o_orderpriority
