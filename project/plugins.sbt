// scalafmt for `make fmt` / `make lint` (settings in ../.scalafmt.conf). Resolved from Maven
// Central like everything else (project/repositories).
addSbtPlugin("org.scalameta" % "sbt-scalafmt" % "2.5.6")
