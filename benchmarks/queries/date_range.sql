-- One week of shipments.
-- tuned: lineitem=tuned_lineitem_by_shipdate
SELECT sum(l_extendedprice * l_discount) AS revenue, count(*) AS lines
FROM lineitem
WHERE l_shipdate >= DATE '1995-03-01' AND l_shipdate < DATE '1995-03-08'
