source [file join [file dirname [info script]] greet.tcl]
puts [greet World]
