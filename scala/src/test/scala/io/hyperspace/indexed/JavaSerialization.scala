package io.hyperspace.indexed

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}

/** Test support: a value written with Java serialization and read back, as a block stored on disk would be. */
object JavaSerialization {
  def serializedCopy[T](value: T): T = {
    val out = new ByteArrayOutputStream()
    val oos = new ObjectOutputStream(out)
    oos.writeObject(value)
    oos.close()
    new ObjectInputStream(new ByteArrayInputStream(out.toByteArray)).readObject().asInstanceOf[T]
  }
}
