package sim

const sysProcessVMReadv = 270 // process_vm_readv (the syscall package does not name it)
