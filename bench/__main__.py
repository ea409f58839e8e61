from bench.suite import main

main()
