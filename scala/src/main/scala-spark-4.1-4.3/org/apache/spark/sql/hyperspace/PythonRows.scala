package org.apache.spark.sql.hyperspace

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.python.EvaluatePython
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/**
 * Rows handed to Python as pickled bytes, in the form `DataFrame.collect()` sends them (PySpark
 * unpickles them into `Row`s with its own converters), binary values as the session's
 * `spark.sql.execution.pyspark.binaryAsBytes` says.
 */
object PythonRows {

  /** `rows` of `schema`, pickled as one list of PySpark rows. */
  def pickle(rows: Seq[InternalRow], schema: StructType): Array[Byte] = {
    EvaluatePython.registerPicklers()
    val binaryAsBytes = SQLConf.get.pysparkBinaryAsBytes
    val out = new java.util.ArrayList[Any](rows.length)
    rows.foreach(r => out.add(EvaluatePython.toJava(r, schema, binaryAsBytes)))
    new net.razorvine.pickle.Pickler(true, false).dumps(out)
  }
}
