-- TPC-H Q1 (pricing summary): a scan of lineitem that none of this suite's indexes can serve
-- (l_returnflag, l_linestatus and l_tax are in none; an index covering them, as the advisor
-- recommends, can: benchmarks/results/q1-zorder-sf1.md); with Hyperspace on it must cost what it
-- costs without.
SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, sum(l_extendedprice) AS sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc,
       count(*) AS count_order
FROM lineitem
WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL 90 DAYS
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus
