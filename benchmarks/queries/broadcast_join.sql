-- lineitem ⋈ part on the part key: part (200K rows per SF) is within Spark's broadcast threshold,
-- so Spark broadcasts it. Both sides have a covering index on the join key (li_partkey,
-- part_partkey); Hyperspace must leave the broadcast join to Spark, not sort-merge two indexes.
-- tuned: lineitem=tuned_lineitem_by_partkey, part=tuned_part_by_partkey
SELECT p_brand, count(*) AS lines, sum(l_extendedprice) AS revenue
FROM lineitem JOIN part ON l_partkey = p_partkey
GROUP BY p_brand
ORDER BY p_brand
