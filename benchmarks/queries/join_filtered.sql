-- The same join restricted to one month of orders.
-- tuned: lineitem=tuned_lineitem_by_orderkey, orders=tuned_orders_by_orderkey
SELECT o_orderpriority, count(*) AS lines, sum(l_extendedprice) AS revenue
FROM lineitem JOIN orders ON l_orderkey = o_orderkey
WHERE o_orderdate BETWEEN DATE '1995-01-01' AND DATE '1995-01-31'
GROUP BY o_orderpriority
ORDER BY o_orderpriority
